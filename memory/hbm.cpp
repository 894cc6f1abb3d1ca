#include "memory/hbm.h"

#include <memory>

namespace tpusim {

Hbm::Hbm(sc_core::sc_module_name name, const HbmConfig& cfg, StatsRegistry& stats, const std::string& p)
    : HbmModel(name),
      socket("socket"),
      cfg_(cfg),
      read_bytes_(stats.add(p + ".read_bytes", StatUnit::kBytes, "bytes read by the program")),
      write_bytes_(stats.add(p + ".write_bytes", StatUnit::kBytes, "bytes written by the program")),
      moved_bytes_(stats.add(p + ".moved_bytes", StatUnit::kBytes, "bytes moved in whole bursts (>= read + write)")),
      busy_s_(stats.add(p + ".busy_s", StatUnit::kSeconds, "time the device was transferring")),
      queued_s_(stats.add(p + ".queued_s", StatUnit::kSeconds, "time transfers waited for the device")),
      transfers_(stats.add(p + ".transfers", StatUnit::kCount, "transfers served")) {
  socket.register_b_transport(this, &Hbm::b_transport);
}

void Hbm::b_transport(int /*initiator*/, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  StridedTile tile;
  if (auto* ext = payload.get_extension<StridedTileExtension>()) {
    tile = ext->tile;
  } else {
    tile.rows = 1;
    tile.row_bytes = payload.get_data_length();
    tile.stride_bytes = tile.row_bytes;
    tile.offset = payload.get_address();
  }
  if (cfg_.capacity > 0 && tile.offset + tile.useful_bytes() > static_cast<Bytes>(cfg_.capacity) && tile.rows <= 1) {  // 0: unbounded
    payload.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  const bool same = have_last_ && tile.rows == last_tile_.rows && tile.row_bytes == last_tile_.row_bytes &&
                    tile.stride_bytes == last_tile_.stride_bytes && tile.offset == last_tile_.offset;
  if (!same) {
    last_timing_ = hbm_transfer(cfg_, tile);
    last_tile_ = tile;
    have_last_ = true;
  }
  const HbmTransferTiming& t = last_timing_;
  // The request reaches the device at now + delay; the access latency is a
  // pipeline delay (not occupancy); the burst time occupies the device.
  const double now = (sc_core::sc_time_stamp() + delay).to_seconds();
  const double end = device_.reserve(now + t.latency_seconds, t.transfer_seconds);
  delay += sc_core::sc_time(end - now, sc_core::SC_SEC);
  (payload.is_read() ? read_bytes_ : write_bytes_) += static_cast<double>(t.useful_bytes);
  moved_bytes_ += static_cast<double>(t.moved_bytes);
  busy_s_ += t.transfer_seconds;
  transfers_ += 1;
  queued_s_.value = device_.queued_seconds();
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

TPUSIM_REGISTER_HBM_MODEL(channels,
                          "bursts of hbm.access_granularity interleaved over hbm.channels, a FIFO device at "
                          "hbm.bandwidth x hbm.efficiency, hbm.latency per access",
                          [](const char* module_name, const HbmConfig& cfg, StatsRegistry& stats,
                             const std::string& stat_prefix) -> std::unique_ptr<HbmModel> {
                            return std::make_unique<Hbm>(module_name, cfg, stats, stat_prefix);
                          });

}  // namespace tpusim
