# Debian packages (cpack -G DEB, in the build folder), one per install component:
#   libxpuinfer0     the shared library (Depends from dpkg-shlibdeps; Recommends libze1, the Level Zero loader
#                    it dlopens, when built with XPU support)
#   libxpuinfer-dev  header, static archive, pkg-config file, CMake package (Depends: libxpuinfer0 of the same
#                    version and the -dev packages the static archive links)
#   xpuinfer         the CLI
set(CPACK_PACKAGE_NAME xpuinfer)
set(CPACK_PACKAGE_VENDOR "libxpuinfer")
# Who builds the packages signs them: -DXPUINFER_PACKAGE_CONTACT="Name <email>" (the default is a placeholder).
set(XPUINFER_PACKAGE_CONTACT "libxpuinfer developers <libxpuinfer@invalid>" CACHE STRING "Maintainer of the .deb packages")
set(CPACK_PACKAGE_CONTACT "${XPUINFER_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES OFF) # keep symbols: dh-style -dbgsym packages are out of scope

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL Runtime Development CLI)
set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS Runtime)
set(CPACK_COMPONENT_CLI_DEPENDS Runtime)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libxpuinfer${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "embeddable C library running Hugging Face causal LMs on Intel GPUs or the CPU")
if(XPUINFER_XPU)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "libze1")
endif()

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libxpuinfer-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION "libxpuinfer: header, static library, pkg-config file and CMake package")
set(xpi_dev_depends "")
foreach(dep IN LISTS XPI_PKG_DEPS)
  string(REPLACE ":" ";" d "${dep}")
  list(GET d 2 apt)
  list(APPEND xpi_dev_depends "${apt}")
endforeach()
list(APPEND xpi_dev_depends pkg-config)
string(REPLACE ";" ", " xpi_dev_depends "${xpi_dev_depends}")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "${xpi_dev_depends}")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME xpuinfer)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION science)
set(CPACK_COMPONENT_CLI_DESCRIPTION "xpuinfer: command-line text generation with libxpuinfer")
# dpkg-shlibdeps cannot resolve libxpuinfer.so.0 (not installed from a package while building): it finds it in the
# staged Runtime component and leaves it to the component dependency above.
set(CPACK_DEBIAN_CLI_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${PROJECT_BINARY_DIR}")

include(CPack)
