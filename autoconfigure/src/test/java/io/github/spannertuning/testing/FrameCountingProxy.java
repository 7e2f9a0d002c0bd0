package io.github.spannertuning.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback TCP proxy between the client and the test server that reads the HTTP/2 frame headers
 * going each way, so tests count what really crosses the wire: the RST_STREAM frames the client
 * sends (a cancel that reached Netty) and the GOAWAY frames the server sends. Bytes are forwarded
 * unchanged; each client connection gets its own upstream connection, so the server still sees one
 * TCP connection per client channel.
 */
final class FrameCountingProxy implements AutoCloseable {

  /** HTTP/2 frame types (RFC 9113, section 6). */
  private static final int RST_STREAM = 0x3;

  private static final int GOAWAY = 0x7;

  /** Payload bytes kept for the listener: a GOAWAY's error code and the start of its debug data. */
  private static final int PAYLOAD_HEAD = 64;

  /** The client connection preface, which precedes the client's first frame. */
  private static final int CLIENT_PREFACE_LENGTH = 24;

  private final ServerSocket listener;

  private final int targetPort;

  private final Queue<Socket> sockets = new ConcurrentLinkedQueue<>();

  private final AtomicInteger rstStreams = new AtomicInteger();

  private final Map<SocketAddress, AtomicInteger> rstStreamsByConnection =
      new ConcurrentHashMap<>();

  private final AtomicInteger serverRstStreams = new AtomicInteger();

  private final Map<String, AtomicInteger> goAwaysByReason = new ConcurrentHashMap<>();

  private volatile boolean closed;

  FrameCountingProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    this.listener = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::accept, "frame-proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  int port() {
    return this.listener.getLocalPort();
  }

  /** RST_STREAM frames the client sent, on every connection. */
  int rstStreams() {
    return this.rstStreams.get();
  }

  /**
   * RST_STREAM frames the server sent. grpc-java's reset limit counts these too (since 1.7x, as a
   * defence against resets a client provokes).
   */
  int serverRstStreams() {
    return this.serverRstStreams.get();
  }

  /**
   * RST_STREAM frames the client sent on one connection, named as the server sees it (the address
   * {@code Grpc.TRANSPORT_ATTR_REMOTE_ADDR} gives).
   */
  int rstStreams(SocketAddress connection) {
    AtomicInteger count = this.rstStreamsByConnection.get(connection);
    return (count != null) ? count.get() : 0;
  }

  /**
   * GOAWAY frames the server sent, by their HTTP/2 error code and debug data, such as {@code
   * 11/too_many_rststreams} (ENHANCE_YOUR_CALM) or {@code 0/} (NO_ERROR, a graceful shutdown).
   */
  Map<String, Integer> goAways() {
    Map<String, Integer> copy = new ConcurrentHashMap<>();
    this.goAwaysByReason.forEach((reason, count) -> copy.put(reason, count.get()));
    return copy;
  }

  void resetCounts() {
    this.rstStreams.set(0);
    this.serverRstStreams.set(0);
    // Zeroed, not removed: each connection's reader keeps counting into its own.
    this.rstStreamsByConnection.values().forEach((count) -> count.set(0));
    this.goAwaysByReason.clear();
  }

  @Override
  public void close() {
    this.closed = true;
    closeQuietly(this.listener);
    Socket socket;
    while ((socket = this.sockets.poll()) != null) {
      closeQuietly(socket);
    }
  }

  private void accept() {
    while (!this.closed) {
      try {
        Socket client = this.listener.accept();
        Socket upstream = new Socket();
        upstream.setTcpNoDelay(true);
        upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), this.targetPort));
        client.setTcpNoDelay(true);
        this.sockets.add(client);
        this.sockets.add(upstream);
        SocketAddress asServerSeesIt = upstream.getLocalSocketAddress();
        AtomicInteger connectionResets =
            this.rstStreamsByConnection.computeIfAbsent(
                asServerSeesIt, (key) -> new AtomicInteger());
        FrameReader fromClient =
            new FrameReader(
                CLIENT_PREFACE_LENGTH,
                (type, payload, length) -> {
                  if (type == RST_STREAM) {
                    this.rstStreams.incrementAndGet();
                    connectionResets.incrementAndGet();
                  }
                });
        FrameReader fromServer =
            new FrameReader(
                0,
                (type, payload, length) -> {
                  if (type == RST_STREAM) {
                    this.serverRstStreams.incrementAndGet();
                  }
                  if (type == GOAWAY && length >= 8) {
                    String reason =
                        word(payload, 4)
                            + "/"
                            + new String(payload, 8, length - 8, StandardCharsets.US_ASCII);
                    this.goAwaysByReason
                        .computeIfAbsent(reason, (key) -> new AtomicInteger())
                        .incrementAndGet();
                  }
                });
        pump("frame-proxy-up", client, upstream, fromClient);
        pump("frame-proxy-down", upstream, client, fromServer);
      } catch (IOException ex) {
        if (!this.closed) {
          Thread.onSpinWait();
        }
      }
    }
  }

  private void pump(String name, Socket from, Socket to, FrameReader reader) {
    Thread thread =
        new Thread(
            () -> {
              byte[] buffer = new byte[64 * 1024];
              try (InputStream in = from.getInputStream()) {
                OutputStream out = to.getOutputStream();
                int read;
                while ((read = in.read(buffer)) >= 0) {
                  reader.accept(buffer, read);
                  out.write(buffer, 0, read);
                  out.flush();
                }
                to.shutdownOutput();
              } catch (IOException ex) {
                closeQuietly(from);
                closeQuietly(to);
              }
            },
            name);
    thread.setDaemon(true);
    thread.start();
  }

  private static void closeQuietly(AutoCloseable closeable) {
    try {
      closeable.close();
    } catch (Exception ex) {
      // Already closed by the other side.
    }
  }

  private static long word(byte[] bytes, int offset) {
    long value = 0;
    for (int i = 0; i < 4; i++) {
      value = (value << 8) | (bytes[offset + i] & 0xFFL);
    }
    return value;
  }

  /** Called for each frame, with the start of its payload (up to {@value #PAYLOAD_HEAD} bytes). */
  @FunctionalInterface
  private interface FrameListener {
    void onFrame(int type, byte[] payloadHead, int length);
  }

  /**
   * Follows the frame boundaries of one direction of an HTTP/2 connection: a 9-byte header (24-bit
   * length, type, flags, stream id), then the payload, whose first bytes are kept for the frame
   * types that carry an error code and debug data there.
   */
  private static final class FrameReader {

    private enum Part {
      PREFACE,
      HEADER,
      PAYLOAD_HEAD,
      PAYLOAD_REST
    }

    private final FrameListener listener;

    private final byte[] header = new byte[9];

    private final byte[] payloadHead = new byte[PAYLOAD_HEAD];

    private Part part;

    private long prefaceLeft;

    private int filled;

    private int type;

    private int payloadHeadLength;

    private long payloadLeft;

    FrameReader(int prefaceLength, FrameListener listener) {
      this.listener = listener;
      this.prefaceLeft = prefaceLength;
      this.part = (prefaceLength > 0) ? Part.PREFACE : Part.HEADER;
    }

    void accept(byte[] bytes, int length) {
      int i = 0;
      while (i < length) {
        switch (this.part) {
          case PREFACE -> {
            int skip = (int) Math.min(this.prefaceLeft, length - i);
            this.prefaceLeft -= skip;
            i += skip;
            if (this.prefaceLeft == 0) {
              this.part = Part.HEADER;
            }
          }
          case HEADER -> {
            this.header[this.filled++] = bytes[i++];
            if (this.filled == 9) {
              this.filled = 0;
              this.payloadLeft =
                  ((this.header[0] & 0xFFL) << 16)
                      | ((this.header[1] & 0xFFL) << 8)
                      | (this.header[2] & 0xFFL);
              this.type = this.header[3] & 0xFF;
              this.payloadHeadLength = (int) Math.min(PAYLOAD_HEAD, this.payloadLeft);
              if (this.payloadHeadLength == 0) {
                frameSeen();
              } else {
                this.part = Part.PAYLOAD_HEAD;
              }
            }
          }
          case PAYLOAD_HEAD -> {
            this.payloadHead[this.filled++] = bytes[i++];
            this.payloadLeft--;
            if (this.filled == this.payloadHeadLength) {
              this.filled = 0;
              frameSeen();
            }
          }
          case PAYLOAD_REST -> {
            int skip = (int) Math.min(this.payloadLeft, length - i);
            this.payloadLeft -= skip;
            i += skip;
            if (this.payloadLeft == 0) {
              this.part = Part.HEADER;
            }
          }
        }
      }
    }

    private void frameSeen() {
      this.listener.onFrame(this.type, this.payloadHead, this.payloadHeadLength);
      this.part = (this.payloadLeft > 0) ? Part.PAYLOAD_REST : Part.HEADER;
    }
  }
}
