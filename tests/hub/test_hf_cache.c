/* The cache helpers without a network: where the cache is (HF_HUB_CACHE > HF_HOME > XDG_CACHE_HOME > HOME),
 * path validation, refs written atomically and read back (also as Python writes them), relative snapshot
 * links for nested files, .no_exist markers, SHA-256 against the FIPS 180-2 vectors, and the argument
 * errors of xpi_hub_download. Runs under the sanitizers. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/hub.h"

static int file_is(const char *path, const char *want) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char buf[256] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  return n == strlen(want) && !memcmp(buf, want, n);
}

static void check_root(const char *want) {
  char *r = hf_cache_root();
  CHECK(r && !strcmp(r, want), "cache root %s, want %s", r ? r : "(null)", want);
  free(r);
}

int main(void) {
  /* cache location precedence, as huggingface_hub's constants.py */
  unsetenv("HF_HUB_CACHE");
  unsetenv("HF_HOME");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/u", 1);
  check_root("/home/u/.cache/huggingface/hub");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  check_root("/xdg/huggingface/hub");
  setenv("HF_HOME", "/hfh", 1);
  check_root("/hfh/hub");
  setenv("HF_HUB_CACHE", "/cache", 1);
  check_root("/cache");
  setenv("HF_HUB_CACHE", "~/hubcache", 1); /* expanded as Python's os.path.expanduser */
  check_root("/home/u/hubcache");
  unsetenv("HF_HUB_CACHE");
  setenv("HF_HOME", "~/hfh", 1);
  check_root("/home/u/hfh/hub");

  CHECK(hf_is_commit_hash("0123456789abcdef0123456789abcdef01234567"), "40 hex");
  CHECK(!hf_is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"), "upper case is a branch name");
  CHECK(!hf_is_commit_hash("main"), "main");
  static const char *bad[] = {"", "/abs", "../x", "a/../b", "a//b", "a/", ".", "a/./b", "a\\b", "a\nb"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(!hf_is_safe_relpath(bad[i]), "unsafe '%s'", bad[i]);
  static const char *good[] = {"model.safetensors", "sub/model-00001-of-00002.safetensors", "refs/pr/1", "..a"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) CHECK(hf_is_safe_relpath(good[i]), "safe '%s'", good[i]);

  char *tmp = xpi_test_tmpdir("hf_cache");
  char *repo = xpi_test_strf("%s/models--org--name", tmp);
  const char *c1 = "1111111111111111111111111111111111111111", *c2 = "2222222222222222222222222222222222222222";
  char commit[128];
  CHECK(hf_read_ref(repo, "main", commit, sizeof commit) == XPI_ERR_NOT_FOUND, "no ref yet");
  CHECK_OK(hf_write_ref(repo, "main", c1));
  CHECK_OK(hf_write_ref(repo, "refs/pr/1", c2)); /* nested revision names become folders, as in Python */
  char *ref = xpi_test_strf("%s/refs/main", repo), *ref_tmp = xpi_test_strf("%s/refs/main.tmp%ld", repo, (long)getpid());
  CHECK(file_is(ref, c1), "refs/main holds the bare hash");
  CHECK(access(ref_tmp, F_OK) != 0, "no temporary file left");
  CHECK_OK(hf_read_ref(repo, "refs/pr/1", commit, sizeof commit));
  CHECK(!strcmp(commit, c2), "nested ref read back");
  CHECK(xpi_test_write_file(ref, "2222222222222222222222222222222222222222\n", 41) == 0, "write ref");
  CHECK_OK(hf_read_ref(repo, "main", commit, sizeof commit));
  CHECK(!strcmp(commit, c2), "a ref with a trailing newline is read");
  CHECK(xpi_test_write_file(ref, "not a hash", 10) == 0, "write ref");
  CHECK_ERR(hf_read_ref(repo, "main", commit, sizeof commit), XPI_ERR_FORMAT, "40-hex");

  /* snapshot links are relative, one "../" per level */
  char *blobs = xpi_test_strf("%s/blobs", repo), *blob = xpi_test_strf("%s/blobs/etag1", repo);
  CHECK_OK(hf_mkdirs(blobs, 1));
  CHECK(xpi_test_write_file(blob, "data", 4) == 0, "write blob");
  CHECK_OK(hf_link_snapshot(repo, c1, "model.safetensors", "etag1"));
  CHECK_OK(hf_link_snapshot(repo, c1, "sub/dir/shard.safetensors", "etag1"));
  CHECK_OK(hf_link_snapshot(repo, c1, "model.safetensors", "etag1")); /* replaced in place */
  char *l1 = hf_snapshot_path(repo, c1, "model.safetensors"), *l2 = hf_snapshot_path(repo, c1, "sub/dir/shard.safetensors");
  char target[256];
  ssize_t n = readlink(l1, target, sizeof target - 1);
  target[n > 0 ? n : 0] = 0;
  CHECK(!strcmp(target, "../../blobs/etag1"), "link target %s", target);
  n = readlink(l2, target, sizeof target - 1);
  target[n > 0 ? n : 0] = 0;
  CHECK(!strcmp(target, "../../../../blobs/etag1"), "nested link target %s", target);
  CHECK(file_is(l2, "data") && hf_is_file(l2), "nested link resolves to the blob");

  CHECK(!hf_no_exist(repo, c1, "generation_config.json"), "no marker yet");
  CHECK_OK(hf_mark_no_exist(repo, c1, "generation_config.json"));
  CHECK(hf_no_exist(repo, c1, "generation_config.json"), "marker set");

  int fd = -1;
  CHECK_OK(hf_lock_blob(tmp, "models--org--name", "etag1", &fd));
  char *lock = xpi_test_strf("%s/.locks/models--org--name/etag1.lock", tmp);
  CHECK(fd >= 0 && access(lock, F_OK) == 0, "lock file where huggingface_hub keeps it");
  hf_unlock(fd);

  /* SHA-256 (FIPS 180-2 examples) */
  char hex[65];
  CHECK(xpi_test_write_file(blob, "abc", 3) == 0, "write");
  CHECK_OK(hub_sha256_file(blob, hex));
  CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "sha256(abc) %s", hex);
  CHECK(xpi_test_write_file(blob, "", 0) == 0, "write");
  CHECK_OK(hub_sha256_file(blob, hex));
  CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "sha256('') %s", hex);

  /* argument errors of the public call */
  size_t len = 0;
  char path[512];
  setenv("HF_HUB_CACHE", tmp, 1);
  CHECK_ERR(xpi_hub_download(NULL, NULL, path, sizeof path, &len), XPI_ERR_INVALID_ARGUMENT, "NULL");
  CHECK_ERR(xpi_hub_download("bad repo id", NULL, path, sizeof path, &len), XPI_ERR_INVALID_ARGUMENT,
            "neither an existing folder");
  CHECK_ERR(xpi_hub_download("./no/such/dir", NULL, path, sizeof path, &len), XPI_ERR_NOT_FOUND, "no such folder");
  CHECK_ERR(xpi_hub_download("org/a--b", NULL, path, sizeof path, &len), XPI_ERR_INVALID_ARGUMENT, "repo id");
  xpi_download_options o;
  xpi_download_options_default(&o);
  o.revision = "../escape";
  CHECK_ERR(xpi_hub_download("org/name", &o, path, sizeof path, &len), XPI_ERR_INVALID_ARGUMENT, "revision");
  o.revision = NULL;
  o.offline = 1;
  CHECK_ERR(xpi_hub_download("org/other", &o, path, sizeof path, &len), XPI_ERR_NOT_FOUND, "offline mode is on");
  CHECK_ERR(xpi_hub_download("org/name", &o, path, sizeof path, &len), XPI_ERR_FORMAT, "40-hex"); /* bad ref */
  CHECK_ERR(xpi_hub_download(blob, NULL, path, sizeof path, &len), XPI_ERR_INVALID_ARGUMENT, "is a file");
  CHECK_OK(xpi_hub_download(tmp, NULL, path, sizeof path, &len));
  CHECK(!strcmp(path, tmp) && len == strlen(tmp), "a folder is returned as is");

  free(lock);
  free(l1);
  free(l2);
  free(blob);
  free(blobs);
  free(ref);
  free(ref_tmp);
  free(repo);
  free(tmp);
  return xpi_test_done();
}
