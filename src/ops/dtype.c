/* Names and element sizes of the op interface's dtypes. */
#include "ops/ops.h"

const char *xpi_dtype_name(xpi_dtype dt) {
  switch (dt) {
    case XPI_DT_F32: return "f32";
    case XPI_DT_F16: return "f16";
    case XPI_DT_BF16: return "bf16";
    case XPI_DT_Q8: return "q8";
    case XPI_DT_Q4: return "q4";
    case XPI_DT_I32: return "i32";
  }
  return "?";
}

size_t xpi_dtype_size(xpi_dtype dt) {
  switch (dt) {
    case XPI_DT_F32: return 4;
    case XPI_DT_F16: return 2;
    case XPI_DT_BF16: return 2;
    case XPI_DT_I32: return 4;
    case XPI_DT_Q8:
    case XPI_DT_Q4: return 0;
  }
  return 0;
}
