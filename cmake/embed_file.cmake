# Turns a file into a C++ source that defines `std::string_view NAME()` (the
# bytes) and `std::string_view NAME_version()` (the first "vX.Y.Z" in the
# file's first 512 bytes, or ""). Run at build time:
#   cmake -DINPUT=chart.min.js -DOUTPUT=chartjs_embed.cc -DNAME=ChartJsSource \
#         -DNAMESPACE=laggard::report_json -P embed_file.cmake
# A byte array rather than a string literal: compilers need not accept
# literals over 64 KiB (-Woverlength-strings), and the bytes stay exact.
foreach(var INPUT OUTPUT NAME NAMESPACE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_file.cmake: -D${var}=... is required")
  endif()
endforeach()

file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){32})" "\\1\n" bytes "${bytes}")

file(READ "${INPUT}" head LIMIT 512)
set(version "")
if(head MATCHES "v([0-9]+\\.[0-9]+\\.[0-9]+)")
  set(version "${CMAKE_MATCH_1}")
endif()

# The file name only: the folder differs between clones, and the generated
# unit should not (cmake/ccache.cmake).
get_filename_component(input_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp" "// Generated at build time by cmake/embed_file.cmake from
// ${input_name}
// (${size} bytes). Do not edit.

#include <string_view>

namespace ${NAMESPACE} {
namespace {
const unsigned char kBytes[${size} + 1] = {
${bytes}0x00};
}  // namespace

std::string_view ${NAME}() { return {reinterpret_cast<const char*>(kBytes), ${size}}; }
std::string_view ${NAME}_version() { return \"${version}\"; }

}  // namespace ${NAMESPACE}
")
# Only touch the output when it changed, so a reconfigure does not rebuild.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
