package io.github.spannertuning.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Arrays;
import java.util.List;

/**
 * Stands in for {@code emulator_main} where a test checks the process rather than Spanner: listens
 * on the {@code --host_port} it is given, as the emulator does, and answers nothing until stopped.
 */
public final class StandInEmulator {

  private StandInEmulator() {}

  public static void main(String[] args) throws IOException {
    int flag = Arrays.asList(args).indexOf("--host_port");
    if (flag < 0 || flag + 1 >= args.length) {
      throw new IllegalArgumentException("usage: --host_port host:port, got " + List.of(args));
    }
    String hostPort = args[flag + 1];
    int colon = hostPort.lastIndexOf(':');
    InetAddress host = InetAddress.getByName(hostPort.substring(0, colon));
    int port = Integer.parseInt(hostPort.substring(colon + 1));
    try (ServerSocket server = new ServerSocket(port, 50, host)) {
      while (true) {
        server.accept().close();
      }
    }
  }
}
