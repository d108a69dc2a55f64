#include "leakcheck/dump/dump_modules.h"

#include <unistd.h>

#include "core/module_map.h"


namespace stackwalk::leakcheck::dump {
namespace {

// The loader names the main executable "" (as the symbolizer does, its file).
std::string ExecutablePath() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "/proc/self/exe";
}

DumpModule FromLoaded(const internal::Module& m) {
  DumpModule out;
  out.path = m.path[0] != '\0' ? std::string(m.path) : ExecutablePath();
  out.build_id.assign(m.build_id, m.build_id + m.build_id_size);
  out.load_bias = m.load_bias;
  out.extent = {m.extent.lo, m.extent.hi};
  for (int i = 0; i < m.exec_count; ++i) out.exec.push_back({m.exec[i].lo, m.exec[i].hi});
  return out;
}

}  // namespace

ModuleIndexer::ModuleIndexer(const std::atomic<ClosedModules*>* closed) : closed_(closed) {
  internal::ModuleMap::Global().RefreshIfChanged();
}

uint32_t ModuleIndexer::IndexOf(DumpModule module) {
  auto key = std::make_pair(module.path, module.load_bias);
  auto found = index_.find(key);
  if (found != index_.end()) return found->second;
  if (taken_) return kUnknownModule;
  const uint32_t index = static_cast<uint32_t>(modules_.size());
  modules_.push_back(std::move(module));
  index_.emplace(std::move(key), index);
  return index;
}

uint32_t ModuleIndexer::IndexOfLoaded(const internal::Module& m) {
  auto same = [&](const Loaded& l) {
    return l.load_bias == m.load_bias && l.lo == m.extent.lo && l.hi == m.extent.hi &&
           l.path == m.path;
  };
  if (last_loaded_ < loaded_.size() && same(loaded_[last_loaded_])) {
    return loaded_[last_loaded_].index;
  }
  for (size_t i = 0; i < loaded_.size(); ++i) {
    if (!same(loaded_[i])) continue;
    last_loaded_ = i;
    return loaded_[i].index;
  }
  const uint32_t index = IndexOf(FromLoaded(m));
  last_loaded_ = loaded_.size();
  loaded_.push_back({m.load_bias, m.extent.lo, m.extent.hi, m.path, index});
  return index;
}

std::vector<DumpModule> ModuleIndexer::TakeModules() {
  taken_ = true;
  std::vector<DumpModule> listed = std::move(modules_);
  modules_.clear();
  return listed;
}

DumpFrame ModuleIndexer::Resolve(uintptr_t pc, uint64_t earliest) {
  // Read again each time: the process's first dlclose may come between a dump's two passes.
  const ClosedModules* closed =
      closed_ != nullptr ? closed_->load(std::memory_order_acquire) : nullptr;
  if (closed != nullptr) return ResolveWithClosed(*closed, pc, earliest);
  return ResolveLoaded(pc);
}

DumpFrame ModuleIndexer::ResolveWithClosed(const ClosedModules& closed, uintptr_t pc,
                                           uint64_t earliest) {
  LoadedObject object;  // a path: constructed only where some object was closed
  if (closed.Find(pc, earliest, &object)) {
    DumpModule m;
    m.path = object.path;
    m.load_bias = object.bias;
    m.extent = {object.start, object.end};
    m.closed_at = object.closed_at;
    const uint32_t index = IndexOf(std::move(m));  // kUnknownModule once the list was taken
    return DumpFrame{index, index != kUnknownModule ? pc - object.bias : pc};
  }
  return ResolveLoaded(pc);
}

DumpFrame ModuleIndexer::ResolveLoaded(uintptr_t pc) {
  // A frame of a module: the link-time address; of none (kUnknownModule), the PC.
  const auto frame = [pc](uint32_t module, uint64_t bias) {
    return DumpFrame{module, module != kUnknownModule ? pc - bias : pc};
  };
  // Every frame is a return address: its object is the one holding the call, a byte back.
  const uint64_t lookup = pc - 1;
  internal::ModuleMap& map = internal::ModuleMap::Global();
  const uint64_t rebuilds = map.rebuild_count();
  if (last_extent_.index != kUnknownModule && last_extent_.rebuilds == rebuilds &&
      lookup - last_extent_.lo < last_extent_.hi - last_extent_.lo) {
    return frame(last_extent_.index, last_extent_.load_bias);
  }
  DumpFrame found = frame(kUnknownModule, 0);
  bool loaded = false;
  map.FindRefreshing(lookup, [&](const internal::Module& m) {
    if (m.is_vdso) return false;  // no file to name it from
    found = frame(IndexOfLoaded(m), m.load_bias);
    // One loaded at its address since the list was taken is not listed: the one unloaded
    // there last may be.
    loaded = found.module != kUnknownModule;
    if (loaded) last_extent_ = {rebuilds, m.extent.lo, m.extent.hi, m.load_bias, found.module};
    return true;
  });
  internal::UnloadedModule unloaded;
  if (!loaded && map.FindUnloaded(lookup, &unloaded)) {
    DumpModule m;
    m.path = unloaded.path;
    m.load_bias = unloaded.load_bias;
    m.extent = {unloaded.extent.lo, unloaded.extent.hi};
    found = frame(IndexOf(std::move(m)), unloaded.load_bias);
  }
  return found;
}

}  // namespace stackwalk::leakcheck::dump
