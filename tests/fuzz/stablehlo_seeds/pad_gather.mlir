module @m {
  func.func @main(%arg0: tensor<4x4xf32>, %arg1: tensor<i32>, %arg2: tensor<8x3xf32>, %arg3: tensor<5x1xi32>) -> (tensor<5x7xf32>, tensor<1x4xf32>, tensor<5x3xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.pad %arg0, %cst, low = [1, 0], high = [0, 1], interior = [0, 2] : (tensor<4x4xf32>, tensor<f32>) -> tensor<5x11xf32>
    %1 = stablehlo.dynamic_slice %arg0, %arg1, %arg1, sizes = [1, 4] : (tensor<4x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
    %2 = "stablehlo.gather"(%arg2, %arg3) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 3>}> : (tensor<8x3xf32>, tensor<5x1xi32>) -> tensor<5x3xf32>
    %3 = "stablehlo.slice"(%0) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 5, 7>, strides = array<i64: 1, 1>} : (tensor<5x11xf32>) -> tensor<5x7xf32>
    return %3, %1, %2 : tensor<5x7xf32>, tensor<1x4xf32>, tensor<5x3xf32>
  }
}
