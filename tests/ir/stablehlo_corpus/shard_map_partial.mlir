module @jit_partial_manual attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) -> (tensor<16x32xf32> {jax.result_info = "result[0]"}, tensor<16x32xf32> {jax.result_info = "result[1]"}) {
    %0:2 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{"x", ?}, {?}]>, <@mesh, [{?}, {?}]>] out_shardings=[<@mesh, [{"x", ?}, {?}]>, <@mesh, [{"x", ?}, {?}]>] manual_axes={"x"} (%arg2: tensor<8x32xf32>, %arg3: tensor<32x32xf32>) {
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %1 = stablehlo.reduce(%arg2 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<8x32xf32>, tensor<f32>) -> tensor<32xf32>
      %2 = sdy.sharding_constraint %1 <@mesh, [{?}]> : tensor<32xf32>
      %3 = stablehlo.broadcast_in_dim %2, dims = [1] : (tensor<32xf32>) -> tensor<1x32xf32>
      %4 = sdy.sharding_constraint %3 <@mesh, [{?}, {?}]> : tensor<1x32xf32>
      %5 = "stablehlo.all_reduce"(%4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %15 = stablehlo.add %arg4, %arg5 : tensor<f32>
        %16 = sdy.sharding_constraint %15 <@mesh, []> : tensor<f32>
        stablehlo.return %16 : tensor<f32>
      }) : (tensor<1x32xf32>) -> tensor<1x32xf32>
      %6 = stablehlo.dot_general %arg2, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
      %7 = sdy.sharding_constraint %6 <@mesh, [{?}, {?}]> : tensor<8x32xf32>
      %8 = stablehlo.tanh %7 : tensor<8x32xf32>
      %9 = sdy.sharding_constraint %8 <@mesh, [{?}, {?}]> : tensor<8x32xf32>
      %10 = stablehlo.broadcast_in_dim %5, dims = [0, 1] : (tensor<1x32xf32>) -> tensor<8x32xf32>
      %11 = sdy.sharding_constraint %10 <@mesh, [{?}, {?}]> : tensor<8x32xf32>
      %12 = stablehlo.add %9, %11 : tensor<8x32xf32>
      %13 = sdy.sharding_constraint %12 <@mesh, [{?}, {?}]> : tensor<8x32xf32>
      %14 = "stablehlo.collective_permute"(%arg2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 4], [4, 0], [1, 5], [5, 1], [2, 6], [6, 2], [3, 7], [7, 3]]> : tensor<8x2xi64>}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
      sdy.return %13, %14 : tensor<8x32xf32>, tensor<8x32xf32>
    } : (tensor<16x32xf32>, tensor<32x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>)
    return %0#0, %0#1 : tensor<16x32xf32>, tensor<16x32xf32>
  }
}
