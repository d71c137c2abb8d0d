# How xent declares its libraries and links MLIR (included by the top-level
# CMakeLists.txt after AddMLIR).
#
#   add_xent_library(<name> [DIALECT | CONVERSION]
#     <sources>...
#     [ADDITIONAL_HEADER_DIRS <dirs>...] [DEPENDS <targets>...]
#     [LINK_COMPONENTS <LLVM components>...]
#     [LINK_LIBS PUBLIC <xent libraries>...]
#     [MLIR_LIBS <MLIR component libraries>...])
#
# declares the library with AddMLIR's add_mlir_dialect_library (DIALECT),
# add_mlir_conversion_library (CONVERSION) or add_mlir_library, without
# AddMLIR's install rule (which would put it into MLIR's own export set), and
# installs it into xent's export set XentTargets (cmake/modules writes it as
# lib/cmake/xent/XentTargets.cmake). MLIR_LIBS names the MLIR libraries the
# code uses; they are linked through xent_link_mlir_libraries (below), that
# is, as libMLIR.so with XENT_LINK_MLIR_DYLIB=ON. LINK_LIBS is for xent's own
# libraries (and anything else that is not part of libMLIR.so).
#
#   xent_link_mlir_libraries(<target> <PUBLIC|PRIVATE|INTERFACE> <MLIR libraries>...)
#
# links <target> against libMLIR.so (the imported target MLIR) when
# XENT_LINK_MLIR_DYLIB is ON, and against the named static component
# libraries otherwise. Executables use it too (tools/, fuzz/).
#
# Every library declared here is listed in the global property
# XENT_LIBRARIES, which cmake/modules reads to give the installed targets
# MLIR's include directories and definitions (XentConfig.cmake).

function(xent_link_mlir_libraries target type)
  # The object library of an AddMLIR library compiles the sources: it gets
  # the usage requirements of what they use, whichever way the link goes (as
  # AddMLIR's mlir_target_link_libraries does).
  if(TARGET obj.${target})
    target_link_libraries(obj.${target} ${type} ${ARGN})
  endif()
  if(XENT_LINK_MLIR_DYLIB)
    target_link_libraries(${target} ${type} MLIR)
  else()
    target_link_libraries(${target} ${type} ${ARGN})
  endif()
endfunction()

function(add_xent_library name)
  cmake_parse_arguments(ARG "DIALECT;CONVERSION" ""
    "ADDITIONAL_HEADER_DIRS;DEPENDS;LINK_COMPONENTS;LINK_LIBS;MLIR_LIBS" ${ARGN})
  if(ARG_DIALECT)
    set(add_function add_mlir_dialect_library)
  elseif(ARG_CONVERSION)
    set(add_function add_mlir_conversion_library)
  else()
    set(add_function add_mlir_library)
  endif()
  # The keywords are parsed (and passed on) so that MLIR_LIBS may stand
  # anywhere among them.
  set(forwarded)
  foreach(keyword ADDITIONAL_HEADER_DIRS DEPENDS LINK_COMPONENTS LINK_LIBS)
    if(ARG_${keyword})
      list(APPEND forwarded ${keyword} ${ARG_${keyword}})
    endif()
  endforeach()
  cmake_language(CALL ${add_function} ${name}
    ${ARG_UNPARSED_ARGUMENTS}
    ${forwarded}
    DISABLE_INSTALL)
  if(ARG_MLIR_LIBS)
    xent_link_mlir_libraries(${name} PUBLIC ${ARG_MLIR_LIBS})
  endif()

  # What a downstream project compiling against the installed library needs
  # that does not depend on where MLIR is: xent's installed headers and
  # C++17 (XentConfig.cmake adds MLIR's include directories).
  target_include_directories(${name} INTERFACE $<INSTALL_INTERFACE:include>)
  target_compile_features(${name} INTERFACE cxx_std_17)
  install(TARGETS ${name}
    EXPORT XentTargets
    ARCHIVE DESTINATION lib${LLVM_LIBDIR_SUFFIX}
    LIBRARY DESTINATION lib${LLVM_LIBDIR_SUFFIX}
    RUNTIME DESTINATION bin)
  set_property(GLOBAL APPEND PROPERTY XENT_LIBRARIES ${name})
endfunction()
