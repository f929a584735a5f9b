# The check behind cmake/isa_variants.cmake's one-definition-rule promise:
#  - OBJECT (localized) defines no global symbol outside KEEP (a glob), so
#    no code built for a newer CPU can stand in for a baseline copy;
#  - UNLOCALIZED (before objcopy) has no shared (weak or unique) writable
#    data outside KEEP: the static variables of inline functions, which
#    localizing would duplicate. Read-only data (tables, vtables, type info,
#    the personality pointer) is fine duplicated.
foreach(var OBJECT UNLOCALIZED KEEP NM OBJDUMP)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_local_object.cmake needs -D${var}=...")
  endif()
endforeach()
string(REPLACE "*" "" prefix "${KEEP}")

execute_process(COMMAND ${NM} --defined-only -g ${OBJECT} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm ${OBJECT} failed")
endif()
string(REPLACE "\n" ";" lines "${syms}")
foreach(line IN LISTS lines)
  if(line MATCHES "^[0-9a-fA-F]* ([A-Za-z]) (.*)$")
    string(FIND "${CMAKE_MATCH_2}" "${prefix}" at)
    if(NOT at EQUAL 0)
      message(FATAL_ERROR "${OBJECT}: global symbol ${CMAKE_MATCH_2} (${CMAKE_MATCH_1}) "
                          "outside ${KEEP}")
    endif()
  endif()
endforeach()

execute_process(COMMAND ${OBJDUMP} -t ${UNLOCALIZED} OUTPUT_VARIABLE table RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "objdump -t ${UNLOCALIZED} failed")
endif()
string(REPLACE "\n" ";" lines "${table}")
foreach(line IN LISTS lines)
  # address, flags (binding, weak, 4 more, type), section, size, [.hidden] name
  if(line MATCHES "^[0-9a-fA-F]+ (u.|.w)....O ([^\t ]+)[\t ]+[0-9a-fA-F]+ (.hidden )?(.*)$")
    set(section ${CMAKE_MATCH_2})
    set(name ${CMAKE_MATCH_4})
    string(FIND "${name}" "${prefix}" at)
    if(NOT at EQUAL 0 AND NOT section MATCHES "^\\.(rodata|data\\.rel\\.ro)"
       AND NOT name MATCHES "^DW\\.ref\\.")
      message(FATAL_ERROR "${UNLOCALIZED}: ${name} is shared writable data (${section}) of "
                          "header code; a localized copy would not be shared")
    endif()
  endif()
endforeach()
