# Writes a C source embedding a binary file: cmake -DIN=x.spv -DOUT=x.c -DNAME=sym -P embed.cmake
# (no xxd needed). Defines: const unsigned char NAME[]; const size_t NAME_size.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n" body "${body}")
file(WRITE "${OUT}.tmp" "/* Generated from ${IN} by kernels/embed.cmake; do not edit. */\n#include <stddef.h>\n"
  "const unsigned char ${NAME}[] = {\n${body}\n};\nconst size_t ${NAME}_size = ${bytes};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
