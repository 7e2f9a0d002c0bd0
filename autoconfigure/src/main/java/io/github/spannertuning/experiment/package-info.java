/**
 * The switchback experiment: a client measures the effect of its own tuning on the application's
 * traffic, by alternating between the tuned arm and the stock one in time slices and comparing them
 * pair by pair. The arms are the whole tuning against stock, or one feature on against off. A fleet
 * of instances can run one experiment together, each deriving the same schedule from the wall clock
 * and the fleet's id. No Spring in it.
 *
 * <p>Its public API: {@link io.github.spannertuning.experiment.ExperimentSlot} (one per client:
 * start, stop, abort, the result, and the calls the RPC path makes), {@link
 * io.github.spannertuning.experiment.ExperimentPlan} with {@link
 * io.github.spannertuning.experiment.CarryOver} and {@link
 * io.github.spannertuning.experiment.GuardRail} (and {@link
 * io.github.spannertuning.experiment.InvalidExperimentPlanException} for a plan refused), {@link
 * io.github.spannertuning.experiment.ArmSwitch} and {@link
 * io.github.spannertuning.experiment.ExperimentTimer} (what the client provides), {@link
 * io.github.spannertuning.experiment.ExperimentResult} (what the endpoint shows), and {@link
 * io.github.spannertuning.experiment.RecordedCallListener} (each recorded call, for meters). The
 * schedules ({@code Experiment}, {@code FleetSchedule}) and their thread ({@code
 * ExperimentThread}), the recorder ({@code SliceRecorder}) and the statistics ({@code
 * ExperimentAnalysis}, {@code SignedRank}, {@code Proportion}) are package-private.
 */
package io.github.spannertuning.experiment;
