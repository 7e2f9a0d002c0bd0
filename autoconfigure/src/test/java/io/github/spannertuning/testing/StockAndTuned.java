package io.github.spannertuning.testing;

/**
 * A workload's figures on the stock client and on the tuned one, measured in that order: what a
 * check prints side by side before it bounds the tuned figure.
 */
public record StockAndTuned<T>(T stock, T tuned) {

  /** The workload, on a stock client ({@code tuned} false) or a tuned one. */
  @FunctionalInterface
  public interface Workload<T> {
    T run(boolean tuned) throws Exception;
  }

  public static <T> StockAndTuned<T> measure(Workload<T> workload) throws Exception {
    T stock = workload.run(false);
    return new StockAndTuned<>(stock, workload.run(true));
  }

  /**
   * Prints both figures on one line, {@code what: stock … | tuned …}, and returns it for the
   * checks' messages.
   */
  public String print(String what) {
    String figures = what + ": stock " + this.stock + " | tuned " + this.tuned;
    System.out.println(figures);
    return figures;
  }

  /** As {@link #print(String)}, {@code what} formatted from {@code format} and {@code args}. */
  public String print(String format, Object... args) {
    return print(String.format(format, args));
  }
}
