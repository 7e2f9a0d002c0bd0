package io.github.spannertuning.observation;

import io.micrometer.common.docs.KeyName;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;
import io.micrometer.observation.docs.ObservationDocumentation;

/**
 * The observations of a Spanner client's calls and their keys: a public contract, documented in
 * docs/metrics-and-endpoint.md. Every key is of low cardinality; none holds SQL, a parameter, a row
 * or a channel.
 */
public enum SpannerObservationDocumentation implements ObservationDocumentation {

  /**
   * One client operation: one call of an RPC method, with its retries, a stream's resumes and a
   * hedged read's second call, from the call to its end (for a stream, its last message or close).
   */
  OPERATION {
    @Override
    public String getName() {
      return "spanner.client.operation";
    }
  },

  /** One RPC attempt: one gRPC call, from its request to its close. */
  ATTEMPT {
    @Override
    public String getName() {
      return "spanner.client.attempt";
    }
  };

  @Override
  public Class<? extends ObservationConvention<? extends Observation.Context>>
      getDefaultConvention() {
    return DefaultSpannerCallObservationConvention.class;
  }

  @Override
  public KeyName[] getLowCardinalityKeyNames() {
    return LowCardinalityKeys.values();
  }

  /** The timer of the Google front end's own time of each response ({@code gfet4t7}). */
  public static final String SERVER_DURATION = "spanner.client.server.duration";

  /** Responses that carried no {@code gfet4t7} time: they may never have reached a frontend. */
  public static final String SERVER_DURATION_MISSING = "spanner.client.server.duration.missing";

  /** The timer of the application front end's time ({@code afe}), where Spanner sends it. */
  public static final String AFE_DURATION = "spanner.client.server.afe.duration";

  /** The keys of every observation and meter, after OpenTelemetry's database conventions. */
  public enum LowCardinalityKeys implements KeyName {

    /** Always {@code gcp.spanner}. */
    DB_SYSTEM_NAME {
      @Override
      public String asString() {
        return "db.system.name";
      }
    },

    /** The RPC method, e.g. {@code ExecuteStreamingSql} or {@code Commit}. */
    DB_OPERATION_NAME {
      @Override
      public String asString() {
        return "db.operation.name";
      }
    },

    /** The database ID. */
    DB_NAMESPACE {
      @Override
      public String asString() {
        return "db.namespace";
      }
    },

    /** The name of the gRPC status code the call ended with, or {@code none}. */
    ERROR_TYPE {
      @Override
      public String asString() {
        return "error.type";
      }
    },

    /** The client's name, as the {@code spannertuning} endpoint names it. */
    SPANNER_CLIENT {
      @Override
      public String asString() {
        return "spanner.client";
      }
    }
  }
}
