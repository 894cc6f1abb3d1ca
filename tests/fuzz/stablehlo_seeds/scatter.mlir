module @m {
  func.func @main(%arg0: tensor<8x3xf32>, %arg1: tensor<2x1xi32>, %arg2: tensor<2x3xf32>, %arg3: tensor<4x6xf32>, %arg4: tensor<2x2xf32>) -> (tensor<8x3xf32>, tensor<4x6xf32>) {
    %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<8x3xf32>, tensor<2x1xi32>, tensor<2x3xf32>) -> tensor<8x3xf32>
    %cst = stablehlo.constant dense<0.0> : tensor<f32>
    %1 = "stablehlo.select_and_scatter"(%arg3, %arg4, %cst) <{padding = dense<0> : tensor<2x2xi64>, window_dimensions = array<i64: 2, 3>, window_strides = array<i64: 2, 3>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare  GE, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }, {
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<2x2xf32>, tensor<f32>) -> tensor<4x6xf32>
    return %0, %1 : tensor<8x3xf32>, tensor<4x6xf32>
  }
}
