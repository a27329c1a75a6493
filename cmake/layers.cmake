# The layers of agc and who sees whose headers, bottom first:
#
#   support   support/: utilities that know nothing of tensors (the
#             protobuf text-format reader)
#   runtime   runtime/: tensors, the op table, eager kernels, the public ag.h
#   ir        ir/: the graph IR, the tracer, signatures, the reference
#             executor
#   passes    passes/: optimization passes, analyses and their manager
#   backend   backend/: the target interface (target.h), the registry
#             (target.c) and one folder per target: backend/reference (the
#             interpreter), backend/cpu (LLVM), backend/tpu (the simulated
#             TPU, `tpu-model`)
#   pipeline  pipeline/: the one compile pipeline, tiered execution, the
#             function cache, batching
#   model     model/: saved models: the directory format, save, load, call
#   converter converter/: the inference converter: options, placement,
#             report
#   tools     agc (frontend/), agc-opt, agc-model and agc-convert (tools/),
#             tests and benchmarks: above every layer, not in libag
#
# Each folder's map (which file holds what) is its main header's top
# comment or its CMakeLists.txt's; tests/docs/check_maps.py checks that
# every source file is named in its folder's map and every folder here.
#
# Each layer is an INTERFACE library, ag_layer_<name>, that carries its
# include directory and the layer below it. Code in a layer links its own
# layer's library PRIVATE, so it can include its own headers and those
# below, and nothing above: an include of a higher layer fails to compile.

add_library(ag_layer_support INTERFACE)
target_include_directories(ag_layer_support INTERFACE ${PROJECT_SOURCE_DIR}/support)

add_library(ag_layer_runtime INTERFACE)
target_link_libraries(ag_layer_runtime INTERFACE ag_layer_support)
target_include_directories(ag_layer_runtime INTERFACE
  ${PROJECT_SOURCE_DIR}/runtime/include
  ${PROJECT_SOURCE_DIR}/runtime/core
  ${PROJECT_SOURCE_DIR}/runtime/kernels
  ${PROJECT_SOURCE_DIR}/runtime/autodiff)
target_link_libraries(ag_layer_runtime INTERFACE Threads::Threads)

set(_below runtime)
foreach(layer ir passes backend pipeline model converter)
  add_library(ag_layer_${layer} INTERFACE)
  target_include_directories(ag_layer_${layer} INTERFACE ${PROJECT_SOURCE_DIR}/${layer})
  target_link_libraries(ag_layer_${layer} INTERFACE ag_layer_${_below})
  set(_below ${layer})
endforeach()

# ag_layer_objects(<target> <layer> <sources>...): an object library of
# libag (or libag_rt) in <layer>.
function(ag_layer_objects target layer)
  add_library(${target} OBJECT ${ARGN})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON
                                             C_VISIBILITY_PRESET default)
  target_link_libraries(${target} PRIVATE ag_layer_${layer} ag_warnings)
  # AG_INSIDE_AGC: ag.h's AG_HERE does not compile here, so no call the
  # library makes on a user's behalf can name the library's own file
  target_compile_definitions(${target} PRIVATE _GNU_SOURCE AG_INSIDE_AGC)
endfunction()
