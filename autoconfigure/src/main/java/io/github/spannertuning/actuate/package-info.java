/**
 * The {@code spannertuning} Actuator endpoint. It is handed the tuned clients by name and knows
 * nothing of the auto-configuration.
 */
package io.github.spannertuning.actuate;
