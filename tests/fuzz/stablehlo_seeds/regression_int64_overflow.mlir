module @m {
  func.func @main(%arg0: tensor<8x16xf32>) -> tensor<16x8xf32> {
    %0 = stablehlo.transpose %arg0, dims = [1, 99999999999999999999] : (tensor<8x16xf32>) -> tensor<16x8xf32>
    return %0 : tensor<16x8xf32>
  }
}
