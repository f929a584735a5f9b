# Compile through ccache (Debian: ccache) when it is installed and its cache
# directory is writable; otherwise build without it and say so once per
# build folder. The cache is shared by clones in other folders:
#   base_dir = this source tree: ccache hashes paths under it relative to
#              the build folder, so /a/laggard and /b/laggard hash alike;
#   hash_dir = false and -ffile-prefix-map: the -g output names ./src/...,
#              not the folder, so sharing the object files is safe.
# LAGGARD_CCACHE=OFF, or a CMAKE_CXX_COMPILER_LAUNCHER of one's own, turns
# it off. `ccache -s` shows the hits (docs/performance.md, "Build").
option(LAGGARD_CCACHE "Compile through ccache when it is installed and usable" ON)

add_compile_options("-ffile-prefix-map=${PROJECT_SOURCE_DIR}=.")

set(_ccache_state "")
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(_ccache_state "own launcher")
elseif(NOT LAGGARD_CCACHE)
  set(_ccache_state "off")
else()
  find_program(LAGGARD_CCACHE_PROGRAM ccache)
  if(NOT LAGGARD_CCACHE_PROGRAM)
    set(_ccache_state "absent")
    set(_ccache_said "laggard: ccache is not installed; building without a compiler cache (apt-get install ccache)")
  else()
    execute_process(COMMAND ${LAGGARD_CCACHE_PROGRAM} --get-config cache_dir
      OUTPUT_VARIABLE _ccache_dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _ccache_rc
      ERROR_QUIET)
    set(_ccache_ok FALSE)
    if(_ccache_rc EQUAL 0 AND _ccache_dir)
      # Writable means a file can be made there, as ccache will.
      execute_process(COMMAND sh -c "mkdir -p \"$1\" && f=$(mktemp \"$1/.laggard-probe.XXXXXX\") && rm -f \"$f\""
        sh "${_ccache_dir}" RESULT_VARIABLE _probe_rc OUTPUT_QUIET ERROR_QUIET)
      if(_probe_rc EQUAL 0)
        set(_ccache_ok TRUE)
      endif()
    endif()
    if(_ccache_ok)
      set(_ccache_state "on ${_ccache_dir}")
      set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env
        "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" CCACHE_NOHASHDIR=1 ${LAGGARD_CCACHE_PROGRAM})
    else()
      set(_ccache_state "unwritable ${_ccache_dir}")
      set(_ccache_said "laggard: ccache's directory '${_ccache_dir}' is not writable; building without a compiler cache (set CCACHE_DIR)")
    endif()
  endif()
endif()
# Say it once per build folder, and again only when it changes.
if(_ccache_said AND NOT "${_ccache_state}" STREQUAL "${LAGGARD_CCACHE_SAID}")
  message(NOTICE "${_ccache_said}")
endif()
set(LAGGARD_CCACHE_SAID "${_ccache_state}" CACHE INTERNAL "what cmake/ccache.cmake last found")
