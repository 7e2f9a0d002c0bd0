package io.github.spannertuning.testing;

import com.google.spanner.admin.instance.v1.InstanceAdminGrpc;
import com.google.spanner.admin.instance.v1.ListInstanceConfigsRequest;
import com.google.spanner.admin.instance.v1.ListInstanceConfigsResponse;
import io.grpc.stub.StreamObserver;

/**
 * Answers the instance-admin call with which google-cloud-spanner 6.122+ checks that an emulator
 * host named in its options is reachable before the first query, as the emulator does: the configs
 * it lists are none of the tests' concern.
 */
final class EmulatorCheck extends InstanceAdminGrpc.InstanceAdminImplBase {

  @Override
  public void listInstanceConfigs(
      ListInstanceConfigsRequest request,
      StreamObserver<ListInstanceConfigsResponse> responseObserver) {
    responseObserver.onNext(ListInstanceConfigsResponse.getDefaultInstance());
    responseObserver.onCompleted();
  }
}
