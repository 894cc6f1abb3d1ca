module @loops {
  func.func private @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
    %s = "stablehlo.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%s) : (tensor<4xf32>) -> ()
  }
  func.func @main(%p: tensor<i1>, %v: tensor<4xf32>) -> tensor<4xf32> {
    %zero = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %init = "stablehlo.tuple"(%zero, %v) : (tensor<i32>, tensor<4xf32>) -> tuple<tensor<i32>, tensor<4xf32>>
    %w = "stablehlo.while"(%init) ({
    ^bb0(%t: tuple<tensor<i32>, tensor<4xf32>>):
      %i = "stablehlo.get_tuple_element"(%t) {index = 0 : i32} : (tuple<tensor<i32>, tensor<4xf32>>) -> tensor<i32>
      %n = "stablehlo.constant"() {value = dense<10> : tensor<i32>} : () -> tensor<i32>
      %lt = "stablehlo.compare"(%i, %n) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "stablehlo.return"(%lt) : (tensor<i1>) -> ()
    }, {
    ^bb0(%t: tuple<tensor<i32>, tensor<4xf32>>):
      %i = "stablehlo.get_tuple_element"(%t) {index = 0 : i32} : (tuple<tensor<i32>, tensor<4xf32>>) -> tensor<i32>
      %v = "stablehlo.get_tuple_element"(%t) {index = 1 : i32} : (tuple<tensor<i32>, tensor<4xf32>>) -> tensor<4xf32>
      %one = "stablehlo.constant"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
      %i1 = "stablehlo.add"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %v1 = "stablehlo.multiply"(%v, %v) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %r = "stablehlo.tuple"(%i1, %v1) : (tensor<i32>, tensor<4xf32>) -> tuple<tensor<i32>, tensor<4xf32>>
      "stablehlo.return"(%r) : (tuple<tensor<i32>, tensor<4xf32>>) -> ()
    }) {hlo.backend_config = "{\"known_trip_count\":{\"n\":\"10\"}}"} : (tuple<tensor<i32>, tensor<4xf32>>) -> tuple<tensor<i32>, tensor<4xf32>>
    %out = "stablehlo.get_tuple_element"(%w) {index = 1 : i32} : (tuple<tensor<i32>, tensor<4xf32>>) -> tensor<4xf32>
    %c = "stablehlo.if"(%p, %out, %out) ({
    ^bb0(%x: tensor<4xf32>):
      %e = "stablehlo.exponential"(%x) : (tensor<4xf32>) -> tensor<4xf32>
      "stablehlo.return"(%e) : (tensor<4xf32>) -> ()
    }, {
    ^bb0(%x: tensor<4xf32>):
      %n = "stablehlo.negate"(%x) : (tensor<4xf32>) -> tensor<4xf32>
      "stablehlo.return"(%n) : (tensor<4xf32>) -> ()
    }) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %k = func.call @twice(%c) : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%k) : (tensor<4xf32>) -> ()
  }
}
