module @m attributes {mhlo.num_partitions = 4 : i32} {
  func.func @main(%arg0: tensor<8x16xf32>, %arg1: tensor<4x6xf32>) -> (tensor<8x16xf32>, tensor<8x64xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<2x2xf32>, tensor<4x6xf32>) {
    %0 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %1 = "stablehlo.all_gather"(%arg0) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> : (tensor<8x16xf32>) -> tensor<8x64xf32>
    %2 = "stablehlo.reduce_scatter"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, scatter_dimension = 0 : i64, use_global_device_ids}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<8x16xf32>) -> tensor<2x16xf32>
    %3 = "stablehlo.collective_permute"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 4, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, -], [3, 0]]> : tensor<4x2xi64>}> : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %4 = "stablehlo.reduce_window"(%arg1, %cst) <{padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 2, 3>, window_strides = array<i64: 2, 3>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x2xf32>
    %5 = "stablehlo.sort"(%arg1) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare  LT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    return %0, %1, %2, %3, %4, %5 : tensor<8x16xf32>, tensor<8x64xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<2x2xf32>, tensor<4x6xf32>
  }
}
