# Writes OUT: a C++ file holding every configs/chips/*.yaml as a string.
file(GLOB presets ${ROOT}/configs/chips/*.yaml)
list(SORT presets)
set(body "")
foreach(f ${presets})
  get_filename_component(name ${f} NAME_WE)
  file(RELATIVE_PATH rel ${ROOT} ${f})
  file(READ ${f} text)
  string(FIND "${text}" ")tpusim_yaml\"" bad)
  if(NOT bad EQUAL -1)
    message(FATAL_ERROR "${f} contains the raw-string terminator")
  endif()
  string(APPEND body "    {\"${name}\", \"${rel}\", R\"tpusim_yaml(${text})tpusim_yaml\"},\n")
endforeach()
file(WRITE ${OUT}.tmp "// Generated from configs/chips/*.yaml by cmake/embed_presets.cmake. Do not edit.
#include <array>
#include \"common/config_loader.h\"
namespace tpusim {
namespace {
// The last entry is a sentinel so the array is never empty.
const PresetText kPresetTexts[] = {
${body}    {\"\", \"\", \"\"},
};
}  // namespace
std::span<const PresetText> builtin_presets() {
  return {kPresetTexts, std::size(kPresetTexts) - 1};
}
}  // namespace tpusim
")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
