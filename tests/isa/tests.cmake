# ISA checks with Intel's offline compiler (test_ocloc_isa.py): ocloc from .deb-ocloc (scripts/setup.sh --test
# unpacks Debian's intel-opencl-icd there), the SPIR-V modules of kernels/CMakeLists.txt.
set(XPI_OCLOC_ROOT "${PROJECT_SOURCE_DIR}/.deb-ocloc/root/usr" CACHE PATH "Folder with bin/ocloc and lib/x86_64-linux-gnu (Debian intel-opencl-icd unpacked)")
set_property(TEST isa/test_ocloc_isa.py APPEND PROPERTY ENVIRONMENT "XPI_OCLOC_ROOT=${XPI_OCLOC_ROOT}"
             "XPI_SPV_DIR=${PROJECT_BINARY_DIR}/kernels/generated")
set_tests_properties(isa/test_ocloc_isa.py PROPERTIES SKIP_RETURN_CODE 77 LABELS "isa;python")
