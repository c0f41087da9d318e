module @jit_complex_fft attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x16xcomplex<f32>> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<8x16xcomplex<f32>> {jax.result_info = "result[0]"}, tensor<8x16xf32> {jax.result_info = "result[1]"}, tensor<8x9xcomplex<f32>> {jax.result_info = "result[2]"}, tensor<8x30xf32> {jax.result_info = "result[3]"}, tensor<16xcomplex<f32>> {jax.result_info = "result[4]"}, tensor<8x16xcomplex<f32>> {jax.result_info = "result[5]"}) {
    %0 = call @fft(%arg0) : (tensor<8x16xcomplex<f32>>) -> tensor<8x16xcomplex<f32>>
    %cst = stablehlo.constant dense<(1.000000e+00,2.000000e+00)> : tensor<complex<f32>>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<complex<f32>>) -> tensor<8x16xcomplex<f32>>
    %2 = stablehlo.multiply %0, %1 : tensor<8x16xcomplex<f32>>
    %3 = stablehlo.real %arg0 : (tensor<8x16xcomplex<f32>>) -> tensor<8x16xf32>
    %4 = stablehlo.imag %arg0 : (tensor<8x16xcomplex<f32>>) -> tensor<8x16xf32>
    %5 = stablehlo.negate %4 : tensor<8x16xf32>
    %6 = stablehlo.complex %3, %5 : tensor<8x16xcomplex<f32>>
    %7 = stablehlo.add %2, %6 : tensor<8x16xcomplex<f32>>
    %8 = stablehlo.real %arg0 : (tensor<8x16xcomplex<f32>>) -> tensor<8x16xf32>
    %9 = stablehlo.imag %arg0 : (tensor<8x16xcomplex<f32>>) -> tensor<8x16xf32>
    %10 = stablehlo.multiply %8, %9 : tensor<8x16xf32>
    %11 = stablehlo.abs %arg0 : (tensor<8x16xcomplex<f32>>) -> tensor<8x16xf32>
    %12 = stablehlo.add %10, %11 : tensor<8x16xf32>
    %13 = call @fft_0(%arg1) : (tensor<8x16xf32>) -> tensor<8x9xcomplex<f32>>
    %14 = call @fft_1(%7) : (tensor<8x16xcomplex<f32>>) -> tensor<8x30xf32>
    %15 = stablehlo.multiply %arg0, %arg0 : tensor<8x16xcomplex<f32>>
    %cst_0 = stablehlo.constant dense<(0.000000e+00,0.000000e+00)> : tensor<complex<f32>>
    %16 = stablehlo.reduce(%15 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<8x16xcomplex<f32>>, tensor<complex<f32>>) -> tensor<16xcomplex<f32>>
    %17 = stablehlo.complex %arg1, %arg1 : tensor<8x16xcomplex<f32>>
    return %7, %12, %13, %14, %16, %17 : tensor<8x16xcomplex<f32>>, tensor<8x16xf32>, tensor<8x9xcomplex<f32>>, tensor<8x30xf32>, tensor<16xcomplex<f32>>, tensor<8x16xcomplex<f32>>
  }
  func.func private @fft(%arg0: tensor<8x16xcomplex<f32>>) -> tensor<8x16xcomplex<f32>> {
    %0 = stablehlo.fft %arg0, type = FFT, length = [16] : (tensor<8x16xcomplex<f32>>) -> tensor<8x16xcomplex<f32>>
    return %0 : tensor<8x16xcomplex<f32>>
  }
  func.func private @fft_0(%arg0: tensor<8x16xf32>) -> tensor<8x9xcomplex<f32>> {
    %0 = stablehlo.fft %arg0, type = RFFT, length = [16] : (tensor<8x16xf32>) -> tensor<8x9xcomplex<f32>>
    return %0 : tensor<8x9xcomplex<f32>>
  }
  func.func private @fft_1(%arg0: tensor<8x16xcomplex<f32>>) -> tensor<8x30xf32> {
    %0 = stablehlo.fft %arg0, type = IRFFT, length = [30] : (tensor<8x16xcomplex<f32>>) -> tensor<8x30xf32>
    return %0 : tensor<8x30xf32>
  }
}
