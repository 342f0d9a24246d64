# Install rules: bin/xpuinfer, include/xpuinfer.h, lib/libxpuinfer.so (+ SONAME links) and libxpuinfer.a,
# lib/pkgconfig/xpuinfer.pc, lib/cmake/xpuinfer (xpuinfer::xpuinfer, xpuinfer::xpuinfer_static). Everything is
# relocatable: the .pc and the CMake files find the prefix from where they are.
# Components (the .deb packages of xpuinferPackage.cmake): Runtime (the shared library), Development (header,
# static archive, .so link, pkg-config, CMake), CLI (bin/xpuinfer).
include(CMakePackageConfigHelpers)
set(XPI_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/xpuinfer")

install(TARGETS xpuinfer EXPORT xpuinferTargets
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT Runtime NAMELINK_COMPONENT Development
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS xpuinfer_static EXPORT xpuinferStaticTargets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT Development
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(FILES "${PROJECT_SOURCE_DIR}/include/xpuinfer.h" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT Development)
if(TARGET xpuinfer_cli)
  install(TARGETS xpuinfer_cli RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT CLI)
endif()

# ---- pkg-config
set(XPI_PC_REQUIRES "")
set(XPI_PC_LIBS_PRIVATE "")
foreach(dep IN LISTS XPI_PKG_DEPS)
  string(REPLACE ":" ";" d "${dep}")
  list(GET d 1 module)
  list(GET d 4 form)
  if(form STREQUAL "requires")
    string(APPEND XPI_PC_REQUIRES " ${module}")
  else()
    string(APPEND XPI_PC_LIBS_PRIVATE " ${form}")
  endif()
endforeach()
string(STRIP "${XPI_PC_REQUIRES}" XPI_PC_REQUIRES)
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(XPI_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(XPI_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(XPI_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else() # relative to the .pc file itself: pkg-config knows ${pcfiledir}
  file(RELATIVE_PATH rel "/x/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/x")
  string(REGEX REPLACE "/$" "" rel "${rel}")
  set(XPI_PC_PREFIX "\${pcfiledir}/${rel}")
endif()
string(APPEND XPI_PC_LIBS_PRIVATE " -pthread")
foreach(l ${CMAKE_DL_LIBS} m)
  string(APPEND XPI_PC_LIBS_PRIVATE " -l${l}")
endforeach()
string(STRIP "${XPI_PC_LIBS_PRIVATE}" XPI_PC_LIBS_PRIVATE)
configure_file("${CMAKE_CURRENT_LIST_DIR}/xpuinfer.pc.in" "${PROJECT_BINARY_DIR}/xpuinfer.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/xpuinfer.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig" COMPONENT Development)

# ---- CMake package
install(EXPORT xpuinferTargets NAMESPACE xpuinfer:: DESTINATION "${XPI_CMAKE_DIR}" COMPONENT Development)
install(EXPORT xpuinferStaticTargets NAMESPACE xpuinfer:: DESTINATION "${XPI_CMAKE_DIR}" COMPONENT Development)
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/xpuinferConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/xpuinferConfig.cmake" INSTALL_DESTINATION "${XPI_CMAKE_DIR}")
# 0.x: a new minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/xpuinferConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/xpuinferConfig.cmake" "${PROJECT_BINARY_DIR}/xpuinferConfigVersion.cmake"
              "${CMAKE_CURRENT_LIST_DIR}/xpuinferDeps.cmake"
        DESTINATION "${XPI_CMAKE_DIR}" COMPONENT Development)
