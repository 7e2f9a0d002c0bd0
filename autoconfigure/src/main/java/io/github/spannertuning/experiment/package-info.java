/**
 * The switchback experiment: a client measures the effect of its own tuning on the application's
 * traffic, by alternating between the tuned arm and the stock one in time slices and comparing them
 * pair by pair. No Spring in it.
 *
 * <p>Its public API: {@link io.github.spannertuning.experiment.ExperimentSlot} (one per client:
 * start, stop, abort, the result, and the calls the RPC path makes), {@link
 * io.github.spannertuning.experiment.ExperimentPlan} with {@link
 * io.github.spannertuning.experiment.CarryOver} and {@link
 * io.github.spannertuning.experiment.GuardRail}, {@link
 * io.github.spannertuning.experiment.ArmSwitch} and {@link
 * io.github.spannertuning.experiment.ExperimentTimer} (what the client provides), {@link
 * io.github.spannertuning.experiment.ExperimentResult} (what the endpoint shows), and {@link
 * io.github.spannertuning.experiment.RecordedCallListener} (each recorded call, for meters). The
 * schedule ({@code Experiment}), the recorder ({@code SliceRecorder}) and the statistics ({@code
 * ExperimentAnalysis}, {@code SignedRank}, {@code Proportion}) are package-private.
 */
package io.github.spannertuning.experiment;
