#include "sim/core/reuse_accounts.h"

#include <map>
#include <string_view>

namespace tpusim {

ReuseAccounts::ReuseAccounts(const isa::Program& program) : program_(&program) {
  if (program.reuse.empty()) return;
  std::map<std::string_view, int> section;
  for (std::size_t r = 0; r < program.reuse.size(); ++r) section.emplace(program.reuse[r].label, static_cast<int>(r));
  section_of_.assign(program.strings.size(), -1);
  for (std::uint32_t id = 0; id < program.strings.size(); ++id) {
    if (const auto it = section.find(isa::provenance_root(program.strings.get(id))); it != section.end()) {
      section_of_[id] = it->second;
    }
  }
  sums_.resize(program.reuse.size());
}

void ReuseAccounts::bind(StatsRegistry& stats, const std::string& own, const std::vector<std::string>& prefixes) {
  const std::string mine_prefix = own + ".";
  for (const auto& [name, st] : stats.all()) {
    bool mine = name.starts_with(mine_prefix);
    for (const auto& p : prefixes) mine = mine || name.starts_with(p);
    if (!mine) continue;
    Stat* stat = &stats.add(name, st.unit, st.desc);  // (exists: no insertion)
    index_.emplace(stat, stats_.size());
    stats_.push_back(stat);
  }
  for (Sums& s : sums_) s.stats.assign(stats_.size(), 0.0);
}

void ReuseAccounts::count(Stat* stat, double v, int section) {
  *stat += v;
  if (section < 0) return;
  if (const auto it = index_.find(stat); it != index_.end()) {
    sums_[static_cast<std::size_t>(section)].stats[it->second] += v;
  }
}

void ReuseAccounts::snapshot() {
  before_.resize(stats_.size());
  for (std::size_t i = 0; i < stats_.size(); ++i) before_[i] = stats_[i]->value;
}

void ReuseAccounts::add_since(int section) {
  std::vector<double>& sums = sums_[static_cast<std::size_t>(section)].stats;
  for (std::size_t i = 0; i < stats_.size(); ++i) sums[i] += stats_[i]->value - before_[i];
}

void ReuseAccounts::add_gains(int section, const std::vector<Stat*>& stats, const std::vector<double>& gains) {
  if (section < 0) return;
  std::vector<double>& sums = sums_[static_cast<std::size_t>(section)].stats;
  for (std::size_t i = 0; i < stats.size(); ++i) {
    if (const auto it = index_.find(stats[i]); it != index_.end()) sums[it->second] += gains[i];
  }
}

void ReuseAccounts::enter(int section, const CoreReadings& now) {
  // The time unions and the fabric's counters are the core's and the
  // network's, not an instruction's: they go to the section the retirement
  // frontier is in (the windows of all sections partition the run, as their
  // attributed time does).
  if (window_.section >= 0) {
    Sums& sums = sums_[static_cast<std::size_t>(window_.section)];
    sums.compute_s += now.compute_s - window_.opened.compute_s;
    sums.comm_s += now.comm_s - window_.opened.comm_s;
    sums.exposed_s += now.exposed_s - window_.opened.exposed_s;
    if (now.fabric && window_.opened.fabric) sums.fabric.emplace_back(*window_.opened.fabric, *now.fabric);
  }
  window_.section = section;
  if (section >= 0) window_.opened = now;
}

std::vector<SectionReuse> ReuseAccounts::apply(std::vector<ProvenanceStats>& prov, SkippedTime& skipped,
                                               const AddRepeats& add_repeats) {
  std::vector<SectionReuse> out;
  if (!active()) return out;
  const std::vector<isa::Program::Reuse>& reuse = program_->reuse;
  // Per section: its provenance ids' attributed time is one instance's.
  std::vector<double> instance_s(reuse.size(), 0.0);
  for (std::size_t id = 0; id < section_of_.size(); ++id) {
    if (section_of_[id] >= 0) instance_s[static_cast<std::size_t>(section_of_[id])] += prov[id].attributed_s;
  }
  for (std::size_t id = 0; id < section_of_.size(); ++id) {
    if (section_of_[id] < 0) continue;
    const auto times = static_cast<double>(reuse[static_cast<std::size_t>(section_of_[id])].extra);
    ProvenanceStats& ps = prov[id];
    ps.attributed_s += times * ps.attributed_s;
    ps.busy_s += times * ps.busy_s;
    for (double& v : ps.busy_by) v += times * v;
    ps.flops += times * ps.flops;
    ps.bf16_flops += times * ps.bf16_flops;
    ps.transcendentals += times * ps.transcendentals;
    ps.hbm_bytes += times * ps.hbm_bytes;
    ps.instructions += static_cast<std::uint64_t>(times) * ps.instructions;
  }
  for (std::size_t r = 0; r < reuse.size(); ++r) {
    if (reuse[r].extra <= 0) continue;
    const auto times = static_cast<double>(reuse[r].extra);
    const Sums& sums = sums_[r];
    for (std::size_t i = 0; i < sums.stats.size(); ++i) *stats_[i] += times * sums.stats[i];
    skipped.compute_s += times * sums.compute_s;
    skipped.comm_s += times * sums.comm_s;
    skipped.exposed_s += times * sums.exposed_s;
    for (const auto& [a, b] : sums.fabric) add_repeats(a, b, reuse[r].extra);
    const double added = times * instance_s[r];
    skipped.offset_s += added;
    out.push_back(SectionReuse{reuse[r].label, reuse[r].extra + 1, instance_s[r], added});
  }
  return out;
}

}  // namespace tpusim
