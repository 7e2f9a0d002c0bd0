/**
 * A small application built against each client and Spring Boot line users run, whose tests check
 * what the starter reports and does on that line.
 */
package io.github.spannertuning.compat;
