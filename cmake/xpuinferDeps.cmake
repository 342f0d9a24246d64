# The libraries libxpuinfer links, as VAR:pkg-config module:Debian -dev package:Debian runtime package:.pc form.
# One list for the build (CMakeLists.txt), xpuinfer.pc, the CMake package (the static target's dependencies)
# and the -dev package's Depends. Level Zero is not here: it is dlopen'ed at run time.
# .pc form: "requires" puts the module in Requires.private; a flag goes into Libs.private instead. libcurl is
# linked by flag: its own Libs.private (nghttp2, ssh2, ldap, gssapi, ...) would make `pkg-config --static`
# name static libraries that Debian's libcurl4-openssl-dev does not bring, and libcurl is linked shared anyway.
set(XPI_PKG_DEPS
  "CJSON:libcjson:libcjson-dev:libcjson1:requires"
  "CURL:libcurl:libcurl4-openssl-dev | libcurl-dev:libcurl4:-lcurl"
  "CRYPTO:libcrypto:libssl-dev:libssl3:requires" # SHA-256 of downloaded weights (libcurl exposes none)
  "PCRE2:libpcre2-8:libpcre2-dev:libpcre2-8-0:requires"
  "UTF8PROC:libutf8proc:libutf8proc-dev:libutf8proc2:requires")
