// A two-layer MLP as `jax.jit(f).lower(x, w1, w2).as_text()` prints it
// (written for tpusim in that form: pretty syntax, locations, jax attributes).
#loc1 = loc("x")
module @jit_mlp attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32> {mhlo.layout_mode = "default"} loc("x"), %arg1: tensor<16x32xf32> {mhlo.layout_mode = "default"}, %arg2: tensor<32x4xf32>) -> (tensor<8x4xf32> {jax.result_info = ""}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc(#loc3)
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32> loc(#loc4)
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x32xf32> loc(#loc4)
    %2 = stablehlo.maximum %0, %1 : tensor<8x32xf32> loc(#loc4)
    %3 = call @dense(%2, %arg2) : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32> loc(#loc5)
    return %3 : tensor<8x4xf32> loc(#loc)
  } loc(#loc)
  func.func private @dense(%arg0: tensor<8x32xf32>, %arg1: tensor<32x4xf32>) -> tensor<8x4xf32> {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32> loc(#loc6)
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<8x4xf32>, tensor<f32>) -> tensor<8xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<8xf32>) -> tensor<8x4xf32>
    %3 = stablehlo.subtract %0, %2 : tensor<8x4xf32>
    %4 = stablehlo.exponential %3 : tensor<8x4xf32>
    return %4 : tensor<8x4xf32>
  }
}
#loc = loc(unknown)
#loc3 = loc("jit(mlp)/jit(main)/dot_general"("mlp.py":5:0))
#loc4 = loc("jit(mlp)/jit(main)/max"("mlp.py":5:0))
#loc5 = loc("jit(mlp)/jit(main)/pjit[name=dense]"("mlp.py":6:0))
#loc6 = loc("jit(mlp)/jit(main)/dense/dot_general"("mlp.py":2:0))
