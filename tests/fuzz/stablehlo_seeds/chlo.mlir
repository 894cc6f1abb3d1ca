module @m {
  func.func @main(%arg0: tensor<8x16xf32>, %arg1: tensor<16xf32>, %arg2: tensor<8x1xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x3xf32>, tensor<8x3xi32>, tensor<8x16xf32>, tensor<8x16xi1>) {
    %0 = chlo.erf %arg0 : tensor<8x16xf32> -> tensor<8x16xf32>
    %1 = chlo.tan %arg0 : tensor<8x16xf32> -> tensor<8x16xf32>
    %2:2 = chlo.top_k(%arg0, k = 3) : tensor<8x16xf32> -> (tensor<8x3xf32>, tensor<8x3xi32>)
    %3 = chlo.broadcast_add %arg1, %arg2 : (tensor<16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
    %4 = chlo.broadcast_compare %arg0, %arg1 {comparison_direction = #chlo<comparison_direction GT>} : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xi1>
    return %0, %1, %2#0, %2#1, %3, %4 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x3xf32>, tensor<8x3xi32>, tensor<8x16xf32>, tensor<8x16xi1>
  }
}
