# agcFunctions.cmake - agc as a build step, for projects that find_package(ag)
# (installed next to agConfig.cmake, which includes it; docs/agc.md, "CMake").
#
#   agc_stage_sources(<target> SOURCES <file>... [FLAGS <agc flag>...])
#
#     Converts each file with agc into staged C at build time and builds
#     <target> from the staged C instead (a file listed in the target's own
#     sources is replaced). <target> links ag::ag.
#
#   agc_compile_aot(<target> SOURCE <file> [FUNCTION <name>]
#                   [SIGNATURE <spec>] [TARGET_TRIPLE <triple>] [CPU <cpu>]
#                   [FLAGS <agc flag>...])
#
#     Compiles the AG_FUNCTIONs of <file> that have an AG_SIGNATURE (or the
#     one FUNCTION names, for SIGNATURE if given) ahead of time
#     (agc --emit=obj,header) into a static library <target>, whose users
#     include "<target>.h" and link libag_rt only (ag::ag_rt), no LLVM.
#
# agc parses each file with the target's include directories and compile
# definitions (as the compiler would) and its C standard, and writes a
# dependency file (-MD -MF -MT), so that touching a header the file
# includes runs agc again, with Make and with Ninja: the way Halide's
# add_halide_library adds its generators to a build.
#
# The ag::agc executable (an imported target) runs the conversions; set
# AGC_EXECUTABLE to use another agc.

cmake_policy(PUSH)
cmake_policy(VERSION 3.20)  # CMP0116: depfiles are relative to the current binary dir

# The flags agc needs to parse a file as <target> compiles it, as
# generator expressions (expanded at generate time, with COMMAND_EXPAND_LISTS).
function(_agc_parse_flags target out)
  set(incs "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  set(defs "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  set(std "$<TARGET_PROPERTY:${target},C_STANDARD>")
  set(ext "$<TARGET_PROPERTY:${target},C_EXTENSIONS>")
  # C_EXTENSIONS is on unless set false (CMake's default)
  set(gnu "$<OR:$<STREQUAL:${ext},>,$<BOOL:${ext}>>")
  set(${out}
      "$<$<BOOL:${incs}>:-I$<JOIN:${incs},$<SEMICOLON>-I>>"
      "$<$<BOOL:${defs}>:-D$<JOIN:${defs},$<SEMICOLON>-D>>"
      "$<$<BOOL:${std}>:-std=$<IF:${gnu},gnu,c>${std}>"
      PARENT_SCOPE)
endfunction()

function(_agc_command out)
  if(AGC_EXECUTABLE)
    set(${out} "${AGC_EXECUTABLE}" PARENT_SCOPE)
  else()
    set(${out} "$<TARGET_FILE:ag::agc>" PARENT_SCOPE)
  endif()
endfunction()

# Where the staged file of src goes: under <binary dir>/agc/<target>/, by
# its path below the source dir (two sources of one name stay apart).
function(_agc_staged_path target src out)
  file(RELATIVE_PATH rel "${CMAKE_CURRENT_SOURCE_DIR}" "${src}")
  if(rel MATCHES "^\\.\\./" OR IS_ABSOLUTE "${rel}")
    get_filename_component(rel "${src}" NAME)
  endif()
  string(REGEX REPLACE "\\.[^./]*$" "" stem "${rel}")
  set(${out} "${CMAKE_CURRENT_BINARY_DIR}/agc/${target}/${stem}.ag.c" PARENT_SCOPE)
endfunction()

# Drops src from target's SOURCES, however it was spelled there.
function(_agc_remove_source target src)
  get_target_property(sources ${target} SOURCES)
  if(NOT sources)
    return()
  endif()
  set(kept "")
  foreach(s IN LISTS sources)
    get_filename_component(abs "${s}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT abs STREQUAL src)
      list(APPEND kept "${s}")
    endif()
  endforeach()
  set_property(TARGET ${target} PROPERTY SOURCES "${kept}")
endfunction()

function(agc_stage_sources target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "SOURCES;FLAGS")
  if(NOT TARGET ${target})
    message(FATAL_ERROR "agc_stage_sources: '${target}' is not a target")
  endif()
  if(NOT ARG_SOURCES OR ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "agc_stage_sources(<target> SOURCES <file>... [FLAGS <flag>...]): "
                        "no SOURCES, or unknown arguments '${ARG_UNPARSED_ARGUMENTS}'")
  endif()
  _agc_parse_flags(${target} parse_flags)
  _agc_command(agc)
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    _agc_staged_path(${target} "${src}" staged)
    get_filename_component(src_dir "${src}" DIRECTORY)
    get_filename_component(staged_dir "${staged}" DIRECTORY)
    file(RELATIVE_PATH shown "${CMAKE_BINARY_DIR}" "${staged}")
    add_custom_command(
      OUTPUT "${staged}"
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${staged_dir}"
      COMMAND "${agc}" ${parse_flags} ${ARG_FLAGS} "${src}" -o "${staged}"
              -MD -MF "${staged}.d" -MT "${staged}"
      DEPENDS "${src}" "${agc}"
      DEPFILE "${staged}.d"
      COMMENT "agc: staging ${shown}"
      COMMAND_EXPAND_LISTS VERBATIM)
    _agc_remove_source(${target} "${src}")
    target_sources(${target} PRIVATE "${staged}")
    # The staged file lives in the build tree: its #include "x.h" must
    # still find what sits next to the original (-iquote: searched just
    # after the including file's own directory, as for the original).
    set_property(SOURCE "${staged}" APPEND PROPERTY COMPILE_OPTIONS "-iquote;${src_dir}")
  endforeach()
  target_link_libraries(${target} PRIVATE ag::ag)
endfunction()

function(agc_compile_aot target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "SOURCE;FUNCTION;SIGNATURE;TARGET_TRIPLE;CPU"
                        "FLAGS")
  if(NOT ARG_SOURCE OR ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "agc_compile_aot(<target> SOURCE <file> [FUNCTION <name>] "
                        "[SIGNATURE <spec>] [TARGET_TRIPLE <triple>] [CPU <cpu>] "
                        "[FLAGS <flag>...]): no SOURCE, or unknown arguments "
                        "'${ARG_UNPARSED_ARGUMENTS}'")
  endif()
  get_filename_component(src "${ARG_SOURCE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/agc/${target}")
  set(object "${dir}/${target}${CMAKE_C_OUTPUT_EXTENSION}")
  set(header "${dir}/${target}.h")
  set(options "")
  foreach(opt FUNCTION SIGNATURE TARGET_TRIPLE CPU)
    if(DEFINED ARG_${opt})
      string(TOLOWER "${opt}" name)
      string(REPLACE "_" "-" name "${name}")
      list(APPEND options "--${name}" "${ARG_${opt}}")
    endif()
  endforeach()

  # The library first, so that its properties give agc the parse flags.
  add_library(${target} STATIC "${object}")
  set_source_files_properties("${object}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
  target_include_directories(${target} INTERFACE "$<BUILD_INTERFACE:${dir}>")
  target_link_libraries(${target} INTERFACE ag::ag_rt)

  _agc_parse_flags(${target} parse_flags)
  _agc_command(agc)
  file(RELATIVE_PATH shown "${CMAKE_BINARY_DIR}" "${object}")
  # agc compiles the staged C with $CC to trace it: the project's compiler.
  add_custom_command(
    OUTPUT "${object}" "${header}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}"
    COMMAND "${CMAKE_COMMAND}" -E env "CC=${CMAKE_C_COMPILER}"
            "${agc}" ${parse_flags} ${ARG_FLAGS} ${options} --emit=obj,header "${src}"
            -o "${object}" -MD -MF "${object}.d" -MT "${object}"
    DEPENDS "${src}" "${agc}"
    DEPFILE "${object}.d"
    COMMENT "agc: compiling ${shown} and its header ahead of time"
    COMMAND_EXPAND_LISTS VERBATIM)
  # Users include the header: it must exist before they compile, which a
  # target-level dependency on this one ensures with every generator.
  add_custom_target(${target}_agc DEPENDS "${object}" "${header}")
  add_dependencies(${target} ${target}_agc)
endfunction()

cmake_policy(POP)
