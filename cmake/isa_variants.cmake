# ISA variants of a translation unit: the source compiled again with
# another -march, its symbols in a namespace of its own
# (NS_MACRO=<prefix>_<variant>), and everything else it defines (header
# code it instantiated: std::, fmt::, simdjson::) made local to its object,
# so that the final link never hands baseline code a copy built for a newer
# CPU (the one-definition rule across -march). The caller picks a variant at
# run time with __builtin_cpu_supports checks that match the flags below
# (the compiler may use every extension they enable):
#   haswell  x86-64-v3 && pclmul
#   icelake  x86-64-v4 && avx512vbmi && avx512vbmi2 (&& the haswell checks)
# Used by trace_ingest_bench for simdjson On-Demand, which runs only the
# kernel its translation unit is compiled for (simdjson's "builtin").
#
#   laggard_add_isa_variants(TARGET target SOURCE file NS_MACRO MACRO NS_PREFIX prefix
#                            [LINK_LIBS libs...])
# adds the haswell and icelake variants' objects to `target` and defines
# LAGGARD_ISA_VARIANTS_OK in the caller's scope when it did (x86-64, GCC,
# GNU ld and binutils; otherwise nothing is added and the caller keeps only
# its baseline). GCC only: the run-time checks use its __builtin_cpu_supports
# names (x86-64-v3, x86-64-v4), which older clangs do not know.

# -mtune stays generic: -mtune=haswell / icelake-server made a variant of
# the Kineto reader 3-8% slower on an Ice Lake Xeon (docs/performance.md).
set(LAGGARD_ISA_FLAGS_haswell -march=x86-64-v3 -mpclmul)
set(LAGGARD_ISA_FLAGS_icelake -march=x86-64-v4 -mavx512vbmi -mavx512vbmi2 -mpclmul)

option(LAGGARD_ISA_VARIANTS "Build x86-64 ISA variants (haswell, icelake) where used" ON)
set(_laggard_isa_ok FALSE)
# Off in sanitizer and libFuzzer builds: their instrumentation (ASan
# globals, coverage sections) is not worth carrying through ld -r.
if(LAGGARD_ISA_VARIANTS AND NOT LAGGARD_SANITIZE AND NOT LAGGARD_FUZZ
   AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$"
   AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_OBJCOPY AND CMAKE_NM AND CMAKE_OBJDUMP)
  find_program(LAGGARD_LD_BFD NAMES ld.bfd ld)
  if(LAGGARD_LD_BFD)
    execute_process(COMMAND ${LAGGARD_LD_BFD} --help OUTPUT_VARIABLE _ld_help ERROR_QUIET)
    if(_ld_help MATCHES "force-group-allocation")
      set(_laggard_isa_ok TRUE)
    endif()
  endif()
endif()
if(LAGGARD_ISA_VARIANTS AND NOT _laggard_isa_ok)
  message(STATUS "ISA variants off: needs x86-64, GCC, GNU ld and binutils, and no "
    "sanitizer or fuzzer build")
endif()

function(laggard_add_isa_variants)
  cmake_parse_arguments(A "" "TARGET;SOURCE;NS_MACRO;NS_PREFIX" "LINK_LIBS" ${ARGN})
  if(NOT _laggard_isa_ok)
    return()
  endif()
  foreach(variant haswell icelake)
    set(objlib ${A_TARGET}_${variant})
    add_library(${objlib} OBJECT ${A_SOURCE})
    # -fno-gnu-unique: GCC's unique binding of inline functions' static
    # data (a digits table) would survive the localization and clash.
    target_compile_options(${objlib} PRIVATE ${LAGGARD_ISA_FLAGS_${variant}} -fno-gnu-unique)
    target_compile_definitions(${objlib} PRIVATE ${A_NS_MACRO}=${A_NS_PREFIX}_${variant})
    target_link_libraries(${objlib} PRIVATE ${A_LINK_LIBS})
    # The mangled prefix of namespace laggard::<prefix>_<variant>.
    string(LENGTH "${A_NS_PREFIX}_${variant}" len)
    set(keep "_ZN7laggard${len}${A_NS_PREFIX}_${variant}*")
    set(out ${CMAKE_CURRENT_BINARY_DIR}/${objlib}_local.o)
    add_custom_command(OUTPUT ${out}
      COMMAND ${LAGGARD_LD_BFD} -r --force-group-allocation $<TARGET_OBJECTS:${objlib}>
        -o ${out}.tmp
      COMMAND ${CMAKE_OBJCOPY} --wildcard --keep-global-symbol=${keep} ${out}.tmp ${out}
      COMMAND ${CMAKE_COMMAND} -DOBJECT=${out} -DUNLOCALIZED=${out}.tmp -DKEEP=${keep}
        -DNM=${CMAKE_NM} -DOBJDUMP=${CMAKE_OBJDUMP} -P ${PROJECT_SOURCE_DIR}/cmake/check_local_object.cmake
      COMMAND ${CMAKE_COMMAND} -E rm -f ${out}.tmp
      DEPENDS $<TARGET_OBJECTS:${objlib}> ${PROJECT_SOURCE_DIR}/cmake/check_local_object.cmake
      COMMAND_EXPAND_LISTS
      COMMENT "Localizing the ${variant} variant of ${A_SOURCE}")
    set_source_files_properties(${out} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    target_sources(${A_TARGET} PRIVATE ${out})
  endforeach()
  set(LAGGARD_ISA_VARIANTS_OK TRUE PARENT_SCOPE)
endfunction()
