/* Test helper: a copy of the bundled tinyfortunes model with one weight replaced by NaN or infinity (bf16
 * bits), written as a new safetensors file (the header rebuilt with cJSON), for the non-finite-logits tests
 * on the CPU (tests/generate/test_numeric.c) and on xpu:0 (tests/xpu/test_xpu_numeric.c). */
#ifndef XPI_TEST_NAN_MODEL_H
#define XPI_TEST_NAN_MODEL_H

#include <stdint.h>
#include <unistd.h>

#include "check.h"

#define BF16_NAN 0x7FC0
#define BF16_INF 0x7F80

static unsigned char *nan_model_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n);
  if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) exit(3);
  fclose(f);
  *len = (size_t)n;
  return b;
}

/* A fresh folder holding tinyfortunes (from src) with element `index` of `tensor` set to the bf16 `bits`.
 * untie: config.json says tie_word_embeddings false and the checkpoint gets an lm_head.weight copied from the
 * unchanged embedding (so an embedding row can break without breaking the lm_head). Returns the malloc'd path. */
static char *nan_model(const char *src, const char *tensor, size_t index, uint16_t bits, int untie) {
  char *dir = xpi_test_tmpdir("nan");
  const char *links[] = {"tokenizer.json", "tokenizer_config.json", "generation_config.json"};
  for (int i = 0; i < 3; i++) {
    char *a = xpi_test_strf("%s/%s", src, links[i]), *b = xpi_test_strf("%s/%s", dir, links[i]);
    if (symlink(a, b) != 0) exit(3);
    free(a);
    free(b);
  }
  char *cp = xpi_test_strf("%s/config.json", src);
  cJSON *cfg = xpi_test_load_json(cp);
  free(cp);
  if (untie) cJSON_ReplaceItemInObject(cfg, "tie_word_embeddings", cJSON_CreateFalse());
  char *text = cJSON_Print(cfg), *out = xpi_test_strf("%s/config.json", dir);
  xpi_test_write_file(out, text, strlen(text));
  free(out);
  cJSON_free(text);
  cJSON_Delete(cfg);

  char *sp = xpi_test_strf("%s/model.safetensors", src);
  size_t len;
  unsigned char *st = nan_model_read(sp, &len);
  free(sp);
  if (!st) exit(3);
  uint64_t hl = 0;
  for (int i = 0; i < 8; i++) hl |= (uint64_t)st[i] << (8 * i);
  char *hj = malloc(hl + 1);
  memcpy(hj, st + 8, hl);
  hj[hl] = 0;
  cJSON *h = cJSON_Parse(hj);
  free(hj);
  const unsigned char *payload = st + 8 + hl;
  size_t plen = len - 8 - hl, extra = 0;
  cJSON *emb = cJSON_GetObjectItem(h, "model.embed_tokens.weight");
  size_t e0 = (size_t)cJSON_GetArrayItem(cJSON_GetObjectItem(emb, "data_offsets"), 0)->valuedouble;
  size_t e1 = (size_t)cJSON_GetArrayItem(cJSON_GetObjectItem(emb, "data_offsets"), 1)->valuedouble;
  if (untie) { /* lm_head.weight: the embedding's bytes appended */
    cJSON *lm = cJSON_Duplicate(emb, 1);
    cJSON *off = cJSON_CreateArray();
    cJSON_AddItemToArray(off, cJSON_CreateNumber((double)plen));
    cJSON_AddItemToArray(off, cJSON_CreateNumber((double)(plen + e1 - e0)));
    cJSON_ReplaceItemInObject(lm, "data_offsets", off);
    cJSON_AddItemToObject(h, "lm_head.weight", lm);
    extra = e1 - e0;
  }
  unsigned char *body = malloc(plen + extra);
  memcpy(body, payload, plen);
  if (extra) memcpy(body + plen, payload + e0, extra);
  cJSON *t = cJSON_GetObjectItem(h, tensor);
  if (!t || strcmp(cJSON_GetObjectItem(t, "dtype")->valuestring, "BF16")) {
    fprintf(stderr, "nan_model: no bf16 tensor %s\n", tensor);
    exit(3);
  }
  size_t at = (size_t)cJSON_GetArrayItem(cJSON_GetObjectItem(t, "data_offsets"), 0)->valuedouble + 2 * index;
  body[at] = (unsigned char)(bits & 0xFF);
  body[at + 1] = (unsigned char)(bits >> 8);
  char *nh = cJSON_PrintUnformatted(h);
  size_t nhl = strlen(nh), pad = (8 - nhl % 8) % 8;
  char *mp = xpi_test_strf("%s/model.safetensors", dir);
  FILE *f = fopen(mp, "wb");
  unsigned char l8[8];
  for (int i = 0; i < 8; i++) l8[i] = (unsigned char)((nhl + pad) >> (8 * i));
  if (!f || fwrite(l8, 1, 8, f) != 8 || fwrite(nh, 1, nhl, f) != nhl || fwrite("        ", 1, pad, f) != pad ||
      fwrite(body, 1, plen + extra, f) != plen + extra || fclose(f) != 0)
    exit(3);
  free(mp);
  cJSON_free(nh);
  cJSON_Delete(h);
  free(body);
  free(st);
  return dir;
}

/* Removes what nan_model wrote, and frees dir. */
static void nan_model_remove(char *dir) {
  const char *files[] = {"tokenizer.json", "tokenizer_config.json", "generation_config.json", "config.json",
                         "model.safetensors"};
  for (int i = 0; i < 5; i++) {
    char *p = xpi_test_strf("%s/%s", dir, files[i]);
    unlink(p);
    free(p);
  }
  rmdir(dir);
  free(dir);
}

#endif
