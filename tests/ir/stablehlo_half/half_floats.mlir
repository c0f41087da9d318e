module @jit_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xbf16>, %arg1: tensor<8x3xbf16>, %arg2: tensor<3xf16>) -> (tensor<4x3xbf16> {jax.result_info = "result[0]"}, tensor<3xbf16> {jax.result_info = "result[1]"}, tensor<3xf16> {jax.result_info = "result[2]"}, tensor<3xbf16> {jax.result_info = "result[3]"}, tensor<4x8xf32> {jax.result_info = "result[4]"}) {
    %cst = stablehlo.constant dense<[5.000000e-01, -1.250000e+00, 2.000000e+00]> : tensor<3xbf16>
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xbf16>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [1] : (tensor<3xbf16>) -> tensor<1x3xbf16>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x3xbf16>) -> tensor<4x3xbf16>
    %3 = stablehlo.add %0, %2 : tensor<4x3xbf16>
    %4 = stablehlo.convert %3 : (tensor<4x3xbf16>) -> tensor<4x3xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%4 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<4x3xf32>, tensor<f32>) -> tensor<3xf32>
    %6 = stablehlo.convert %5 : (tensor<3xf32>) -> tensor<3xbf16>
    %cst_1 = stablehlo.constant dense<1.500000e+00> : tensor<f16>
    %7 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f16>) -> tensor<3xf16>
    %8 = stablehlo.multiply %arg2, %7 : tensor<3xf16>
    %cst_2 = stablehlo.constant dense<2.500000e-01> : tensor<f16>
    %9 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f16>) -> tensor<3xf16>
    %10 = stablehlo.subtract %8, %9 : tensor<3xf16>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f16>
    %11 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f16>) -> tensor<3xf16>
    %12 = stablehlo.compare GT, %arg2, %11, FLOAT : (tensor<3xf16>, tensor<3xf16>) -> tensor<3xi1>
    %13 = stablehlo.negate %arg2 : tensor<3xf16>
    %14 = call @_where(%12, %arg2, %13) : (tensor<3xi1>, tensor<3xf16>, tensor<3xf16>) -> tensor<3xf16>
    %15 = stablehlo.convert %14 : (tensor<3xf16>) -> tensor<3xbf16>
    %16 = stablehlo.convert %arg0 : (tensor<4x8xbf16>) -> tensor<4x8xf32>
    %cst_4 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %17 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %18 = stablehlo.multiply %16, %17 : tensor<4x8xf32>
    return %3, %6, %10, %15, %18 : tensor<4x3xbf16>, tensor<3xbf16>, tensor<3xf16>, tensor<3xbf16>, tensor<4x8xf32>
  }
  func.func private @_where(%arg0: tensor<3xi1>, %arg1: tensor<3xf16>, %arg2: tensor<3xf16>) -> tensor<3xf16> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<3xi1>, tensor<3xf16>
    return %0 : tensor<3xf16>
  }
}
