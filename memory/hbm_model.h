// The chip's HBM is a pluggable model (as Ramulator 2 and SST do it): an
// implementation of the HbmModel interface, registered under a name in its
// own file, chosen by the config key `hbm.model`. The chip binds its
// TensorCores' initiator sockets to the model's target socket and knows
// nothing else about it. A new model is one new .cpp file with a
// TPUSIM_REGISTER_HBM_MODEL line, plus its name among the choices of
// `hbm.model` in common/params.def (so configs naming it are checked).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <systemc>
#include <tlm>
#include <vector>

#include "common/config.h"
#include "common/stats.h"

namespace tpusim {

class HbmModel : public sc_core::sc_module {
 public:
  // Any TLM-2.0 base-protocol target socket. The TensorCores of a megacore
  // chip all bind to it: a model for such chips takes several initiators
  // (tlm_utils::multi_passthrough_target_socket).
  using TargetSocket = tlm::tlm_base_target_socket_b<32, tlm::tlm_fw_transport_if<>, tlm::tlm_bw_transport_if<>>;
  explicit HbmModel(sc_core::sc_module_name name) : sc_module(name) {}
  [[nodiscard]] virtual TargetSocket& target() = 0;
};

// What a model's factory receives: the module name, the chip's HBM config,
// and where its stats go (`stat_prefix` = "chip0.hbm").
using HbmFactory = std::function<std::unique_ptr<HbmModel>(const char* module_name, const HbmConfig& cfg,
                                                           StatsRegistry& stats, const std::string& stat_prefix)>;

struct HbmModelInfo {
  std::string name;
  std::string description;
  HbmFactory make;
};

// Registers a model; returns true (for static registration). A second
// model of the same name is a programming error and aborts at start-up.
bool register_hbm_model(HbmModelInfo info);
// The registered models, by name.
[[nodiscard]] std::vector<const HbmModelInfo*> hbm_models();
// nullptr when no model of that name is registered.
[[nodiscard]] const HbmModelInfo* find_hbm_model(std::string_view name);

}  // namespace tpusim

// In a model's .cpp: TPUSIM_REGISTER_HBM_MODEL(channels, "…", factory-lambda).
// (The libraries holding models are linked whole, so the registration runs.)
#define TPUSIM_REGISTER_HBM_MODEL(id, desc, factory) \
  static const bool tpusim_hbm_model_##id = ::tpusim::register_hbm_model({#id, desc, factory})
