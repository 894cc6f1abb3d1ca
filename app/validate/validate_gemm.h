// `tpusim validate gemm FILE.csv`: measured GEMMs of real TPUs (the hardware
// reference suite's gemm.csv) against tpusim.
//
// Each row is one jitted dot C[M,N] = A[M,K] x B[K,N] on one device:
//   chip,dtype,out_dtype,M,N,K,xla_flags,tensorcores,timing,measured,unit,split[,source]
// tpusim compiles and simulates the dot on the chip preset (one TensorCore
// when `tensorcores` is 1) and predicts its device time. `timing` says what
// the measurement holds:
//   device  a profiler span of the program: compared directly;
//   host    Python wall clock per call (dispatch and sync included): the
//           prediction adds the series' per-call overhead, fitted on its
//           calibration rows only (call_overhead_s below).
// A row whose xla_flags set --xla_tpu_scoped_vmem_limit_kib=N is compiled with
// core.vmem.scoped_limit = N KiB (the VMEM a kernel may use).
// A series is (chip, dtype, timing); `split` (cal|val, fixed by the file's
// rule before any error was computed) says which rows fit and which test.
// Reported per series: the overhead, and the mean absolute percentage error
// (MAPE) and signed mean error of the cal and of the val rows. Exit 1 only
// when --tolerance is given and a series' val MAPE exceeds it; 2 on bad input.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim {

// The per-call overhead of a host-timed series (Python dispatch, launch and
// block_until_ready), from its calibration rows: the median of measured -
// predicted over the rows the overhead dominates (predicted device time at
// most a quarter of the measured time: the smallest shapes), else over
// every row; 0 without rows. Seconds.
double call_overhead_s(const std::vector<double>& measured_s, const std::vector<double>& predicted_s);

// The scoped VMEM limit (bytes) an XLA flag string sets: the last
// --xla_tpu_scoped_vmem_limit_kib=N in it; std::nullopt when it sets none.
// Throws std::invalid_argument when the flag's value is not a positive
// whole number of KiB.
std::optional<double> scoped_vmem_limit_bytes(std::string_view xla_flags);

struct ErrorStats {
  std::size_t rows = 0;
  double mape = 0;         // mean |predicted - measured| / measured
  double signed_mean = 0;  // mean (predicted - measured) / measured
};
ErrorStats error_stats(const std::vector<double>& measured, const std::vector<double>& predicted);

// tolerance < 0: report only.
int validate_gemm_csv(const std::string& path, double tolerance, bool json, std::ostream& out, std::ostream& err);

}  // namespace tpusim
