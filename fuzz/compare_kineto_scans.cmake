# Runs a Kineto fuzz target over the same inputs once per bracket indexer of
# the Kineto reader (LAGGARD_KINETO_SCAN unset, i.e. the best the CPU has,
# then avx2, sse2 and scalar), and once with every event parsed by simdjson
# On-Demand instead of the flat-event walker (LAGGARD_KINETO_EVENTS=ondemand),
# and fails unless each input gives the same result digest under all of them. The target appends "<input hash> <result hash>"
# per input to $LAGGARD_FUZZ_KINETO_DIGESTS (kineto_reader_fuzzer.cc).
#
#   cmake -DFUZZER=build/release/fuzz/fuzz_smoke -DARGS=kineto_reader \
#     -DWORK_DIR=/tmp/scan -P fuzz/compare_kineto_scans.cmake
#   cmake -DFUZZER=build-fuzz/fuzz/fuzz_kineto_reader "-DARGS=-runs=0;corpus-dir" \
#     -DWORK_DIR=/tmp/scan -P fuzz/compare_kineto_scans.cmake
#
# Digest lines are sorted before comparing, so a libFuzzer binary may replay
# a corpus directory in any order.

foreach(var FUZZER ARGS WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "compare_kineto_scans.cmake needs -D${var}=...")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(reference "")
foreach(scan default avx2 sse2 scalar ondemand)
  set(digests "${WORK_DIR}/${scan}.txt")
  if(scan STREQUAL "default")
    set(scan_env --unset=LAGGARD_KINETO_SCAN)
  elseif(scan STREQUAL "ondemand")
    set(scan_env --unset=LAGGARD_KINETO_SCAN LAGGARD_KINETO_EVENTS=ondemand)
  else()
    set(scan_env LAGGARD_KINETO_SCAN=${scan})
  endif()
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env ${scan_env} LAGGARD_FUZZ_KINETO_DIGESTS=${digests}
      ${FUZZER} ${ARGS}
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE out
    ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${FUZZER} with LAGGARD_KINETO_SCAN=${scan} failed (${rc}):\n${out}")
  endif()
  file(STRINGS "${digests}" lines)
  list(SORT lines)
  list(LENGTH lines n)
  if(n EQUAL 0)
    message(FATAL_ERROR "no digests written with LAGGARD_KINETO_SCAN=${scan}")
  endif()
  if(reference STREQUAL "")
    set(reference "${lines}")
    set(reference_scan ${scan})
  elseif(NOT lines STREQUAL reference)
    foreach(line IN LISTS lines)
      list(FIND reference "${line}" at)
      if(at EQUAL -1)
        message(FATAL_ERROR "LAGGARD_KINETO_SCAN=${scan} and ${reference_scan} differ; "
                            "first digest only under ${scan}: ${line} (input hash, result hash)")
      endif()
    endforeach()
    message(FATAL_ERROR "LAGGARD_KINETO_SCAN=${scan} and ${reference_scan} give different digests")
  endif()
endforeach()
message(STATUS "${n} inputs, same results with every bracket indexer and event parser")
