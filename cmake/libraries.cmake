# The libraries users link, made of the layers' object libraries:
#
#   libag     everything: the runtime, the IR and tracer, the passes, the
#             targets (the CPU one links the shared LLVM library), the
#             compile pipeline and the function cache, saved models,
#             the converter's options
#   libag_rt  what a program linked with agc's ahead-of-time objects
#             needs: the runtime (with support's suggest.c, for its
#             messages), the IR's core (to load the graphs) and
#             the CPU target's run-time half (the helpers generated code
#             calls, the loader of objects). No LLVM, no libclang.
set(AG_LIB_OBJECTS
  $<TARGET_OBJECTS:ag_support> $<TARGET_OBJECTS:ag_suggest> $<TARGET_OBJECTS:ag_objects> $<TARGET_OBJECTS:ag_ir_core> $<TARGET_OBJECTS:ag_ir>
  $<TARGET_OBJECTS:ag_passes> $<TARGET_OBJECTS:ag_targets>
  $<TARGET_OBJECTS:ag_target_reference> $<TARGET_OBJECTS:ag_target_cpu>
  $<TARGET_OBJECTS:ag_target_tpu>
  $<TARGET_OBJECTS:ag_cpu_runtime> $<TARGET_OBJECTS:ag_pipeline>
  $<TARGET_OBJECTS:ag_model> $<TARGET_OBJECTS:ag_converter_options>
  $<TARGET_OBJECTS:ag_converter>)
set(AG_RT_OBJECTS $<TARGET_OBJECTS:ag_suggest> $<TARGET_OBJECTS:ag_objects> $<TARGET_OBJECTS:ag_ir_core>
    $<TARGET_OBJECTS:ag_cpu_runtime>)

foreach(lib ag ag_static ag_rt ag_rt_static)
  if(lib MATCHES "^ag_rt")
    set(objects ${AG_RT_OBJECTS})
  else()
    set(objects ${AG_LIB_OBJECTS})
  endif()
  if(lib MATCHES "_static$")
    add_library(${lib} STATIC ${objects})
    string(REPLACE "_static" "" out_name ${lib})
    set_target_properties(${lib} PROPERTIES OUTPUT_NAME ${out_name})
    # The static libraries' users must link OpenBLAS themselves.
    target_link_libraries(${lib} INTERFACE $<INSTALL_INTERFACE:openblas>)
  else()
    add_library(${lib} SHARED ${objects})
    set_target_properties(${lib} PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION 0)
    if(NOT AG_SANITIZE AND NOT AG_TSAN)
      # every symbol resolved: what libag_rt needs is really in it
      target_link_options(${lib} PRIVATE -Wl,--no-undefined)
    endif()
  endif()
  set_target_properties(${lib} PROPERTIES ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/runtime
                                          LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/runtime)
  target_include_directories(${lib} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/runtime/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${lib} PRIVATE $<BUILD_INTERFACE:ag::openblas>
                        PUBLIC Threads::Threads m)
  add_library(ag::${lib} ALIAS ${lib})
endforeach()
# libag links the shared LLVM library (the CPU target), never LLVM's static
# component archives. The shared libag hides it (PRIVATE); users of the
# static library link it themselves: in the build tree through the `LLVM`
# target, once installed through its path (in the CMake export) and
# -lLLVM (in pkg-config's Libs.private).
target_link_libraries(ag PRIVATE LLVM)
target_link_libraries(ag_static PRIVATE $<BUILD_INTERFACE:LLVM>
                      INTERFACE $<INSTALL_INTERFACE:${LLVM_LIBRARY_DIR}/libLLVM.so>)
set(AG_PC_PRIVATE_LIBS "-lopenblas -L${LLVM_LIBRARY_DIR} -lLLVM -lpthread -lm")

install(TARGETS ag ag_static ag_rt ag_rt_static EXPORT agTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
