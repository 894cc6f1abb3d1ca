module @m attributes {mhlo.num_partitions = 2 : i32, hlo.num_partitions = "2"} {
  func.func @main(%a: tensor<8x16xf32> {mhlo.sharding = "{devices=[2,1]0,1}", xla_shape = "f32[8,16]{0,1}"}, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
    %f = "mhlo.fusion"(%a, %a) ({
    ^bb0(%p0: tensor<8x16xf32>, %p1: tensor<8x16xf32>):
      %a = "stablehlo.add"(%p0, %p1) {xla_shape = "f32[8,16]{0,1}"} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
      "stablehlo.return"(%a) : (tensor<8x16xf32>) -> ()
    }) {fusion_kind = #mhlo<fusion_kind kLoop>, xla_shape = "f32[8,16]{0,1}"} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %d = "stablehlo.dot_general"(%f, %b) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32> loc("jit(f)/dot")
    %ar = "stablehlo.all_reduce"(%d) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %s = "stablehlo.add"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) {hlo.replica_groups = "{{0,1}}", hlo.channel_id = "3"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %cc = "stablehlo.custom_call"(%ar) {call_target_name = "MyKernel", backend_config = "{\"k\":1}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    "func.return"(%cc) : (tensor<8x4xf32>) -> ()
  }
}
