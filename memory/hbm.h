// HBM as a SystemC module (the `channels` model of hbm.model) with a TLM-2.0 target socket, so another DRAM model
// can be plugged in behind the same socket. Timing comes from the pure
// function hbm_transfer() (channels, bursts, efficiency, latency); the module
// only queues transfers on the shared device (FIFO) and annotates the delay.
// The socket takes several initiators: the TensorCores of a megacore chip
// share one HBM (and its bandwidth).
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "common/config.h"
#include "common/stats.h"
#include "memory/bandwidth_server.h"
#include "memory/hbm_model.h"
#include "sim/timing/hbm_timing.h"

namespace tpusim {

// Carries the strided shape of a transfer on a TLM generic payload (address =
// tile.offset, data_length = useful bytes).
struct StridedTileExtension : tlm::tlm_extension<StridedTileExtension> {
  StridedTile tile;
  [[nodiscard]] tlm::tlm_extension_base* clone() const override { return new StridedTileExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    tile = static_cast<const StridedTileExtension&>(other).tile;
  }
};

// The `channels` HBM model (memory/hbm_model.h): the default of every preset.
class Hbm : public HbmModel {
 public:
  tlm_utils::multi_passthrough_target_socket<Hbm> socket;

  Hbm(sc_core::sc_module_name name, const HbmConfig& cfg, StatsRegistry& stats, const std::string& stat_prefix);
  [[nodiscard]] TargetSocket& target() override { return socket; }

 private:
  void b_transport(int initiator, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);

  const HbmConfig& cfg_;
  BandwidthServer device_;
  // hbm_transfer() of the last tile (it is pure; a DMA loop repeats tiles).
  StridedTile last_tile_;
  HbmTransferTiming last_timing_;
  bool have_last_ = false;
  Stat& read_bytes_;
  Stat& write_bytes_;
  Stat& moved_bytes_;
  Stat& busy_s_;
  Stat& queued_s_;
  Stat& transfers_;
};

}  // namespace tpusim
