/* Causal attention over a paged KV cache, GQA by indexing: query head h reads KV head h / (hq / hk) in place.
 * Cache layout (one layer): K[n_blocks][block_size][hk][hd], V likewise, in kdt (f32/f16/bf16). Token i of a
 * step is at position pos[i] of the sequence whose block table is row seq[i] of tables (max_blocks entries a
 * row): position j of that sequence is row j & (block_size - 1) of block tbl[j >> bshift]. Positions, sequence
 * rows and tables come from device memory, so a recorded step replays with new ones. Token i attends to
 * positions w0..pos[i] of its sequence: w0 = 0, or with a sliding window (window > 0) pos[i] - window + 1
 * (transformers: kv_idx > q_idx - window); the key loops start there, so the blocks before a window are
 * never read. softcap > 0: a score s (after the scale) becomes softcap * tanh(s / softcap) (Gemma 2).
 * Three implementations that agree within rounding:
 *   xpi_attn_eager  reference: full score rows materialized in a scratch buffer, then softmax, then P @ V;
 *   xpi_sdpa        split-K GQA: a work-group per (token, KV head, key split) serves every query head of the
 *                   group from one read of each K/V row, online softmax over blocks of 64 keys read in place,
 *                   the splits merged by the last work-group to finish;
 *   xpi_flash_attention_2  FlashAttention-2 tiling: a work-group takes 4 query rows of one KV head (the
 *                   heads of a GQA group share the K/V tiles staged in local memory), online softmax per row. */
#include "xpi_cl.h"

#define XPI_AWG 64
#define XPI_MAX_HD 256

/* Element offset of position j's row of KV head kh, through block table tbl. */
static inline ulong xpi_kv_row(const global int *tbl, int j, int bshift, int hk, int kh, int hd) {
  ulong row = ((ulong)tbl[j >> bshift] << bshift) + (ulong)(j & ((1 << bshift) - 1));
  return (row * hk + kh) * hd;
}

/* The first key position p attends to. */
static inline int xpi_first_key(int p, int window) { return window > 0 && p >= window ? p - window + 1 : 0; }

static inline float xpi_cap(float s, float softcap) { return softcap > 0.0f ? softcap * tanh(s / softcap) : s; }

static inline float xpi_wg_reduce(local float *red, float v, int is_max) {
  int lid = get_local_id(0);
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = XPI_AWG / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] = is_max ? fmax(red[lid], red[lid + s]) : red[lid] + red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

/* kv_store: K/V row of (token i, KV head h) into its slot. Grid (hd, hk, n). Tokens whose slot is outside the
 * table or the pool are skipped (the host builds the tables; the kernel never writes out of bounds). */
kernel void xpi_kv_store(global void *kc, global void *vc, int kdt, const global float *k, const global float *v,
                         const global int *pos, const global int *seq, const global int *tables, int max_blocks,
                         int bshift, int n_blocks, int hk, int hd) {
  int j = get_global_id(0), h = get_global_id(1), i = get_global_id(2);
  int p = pos[i];
  if (j >= hd || p < 0 || (p >> bshift) >= max_blocks) return;
  const global int *tbl = tables + (ulong)seq[i] * max_blocks;
  int b = tbl[p >> bshift];
  if (b < 0 || b >= n_blocks) return;
  ulong src = ((ulong)i * hk + h) * hd + j, dst = xpi_kv_row(tbl, p, bshift, hk, h, hd) + j;
  xpi_store(kc, kdt, dst, k[src]);
  xpi_store(vc, kdt, dst, v[src]);
}

#define XPI_GC 8     /* query heads of one KV head a work-group serves (a GQA group, or a part of a larger one) */

/* sdpa_forward(out[n,hq,hd], q[n,hq,hd], cache): split-K GQA attention. A work-group serves up to 8 query heads of
 * one KV head (the heads hc * 8 .. of the GQA group kh; hc = ceil((hq / hk) / 8) chunks) for token i over key split
 * s: it reads each K/V row of its keys once for all its heads (the K/V bytes a step must read, where a work-group
 * per query head read them hq / hk times). Grid: n * hk * hc * splits groups of 64, group = ((i * hk + kh) * hc +
 * chunk) * splits + s.
 * splits > 1 (decode, n = 1; xpu_ops.c): split s takes keys w0 + s * chunk.. (chunk a multiple of 64), keeps the
 * online-softmax state (max m, sum l, unnormalized acc) of each head in part[] ((h * splits + s) * (hd + 2):
 * m, l, acc[hd]); the last work-group of (token, KV head, chunk) to finish (counted in cnt[], which it sets back to
 * zero for the next launch) merges the splits' states into out. splits = 1: the state goes to out directly.
 * store (the host sets it only for n = 1, a decode step, so that no other token of the step reads this slot): the
 * kv_store of k/v [hk, hd] fused in: work-group (chunk 0, split 0) of each KV head writes its row into the slot
 * (as xpi_kv_store), and every work-group reads the key/value at the token's own position from kn/vn, rounded as
 * the cache stores them, instead of the slot, which another work-group may not have written yet.
 * The arithmetic per (head, key) is the one-head-a-group kernel's: the score sums q[j] * k[j] in j order, then
 * scale and softcap; only the online-softmax blocking differs (64-key blocks within a split, then the merge). */
__attribute__((reqd_work_group_size(XPI_AWG, 1, 1)))
kernel void xpi_sdpa(global float *out, const global float *q, global void *kc, global void *vc,
                     int kdt, const global int *pos, const global int *seq, const global int *tables, int max_blocks,
                     int bshift, int hq, int hk, int hd, float scale, int window, float softcap, int store,
                     const global float *kn, const global float *vn, int n_blocks, int splits,
                     global float *part, global int *cnt) {
  /* The 8 heads' values side by side as float8 (element hh: head h0 + hh; heads past nh have q = 0 and are never
   * written): whole-vector arithmetic, no per-head arrays, which IGC placed in scratch on PVC (SIMD32). Local
   * memory holds what the work-items exchange, and the accumulators: each work-item its own columns. */
  local float8 qs[XPI_MAX_HD];         /* q[j] of the 8 heads */
  local float8 p[XPI_AWG];             /* the block's scores, then probabilities, key-major */
  local float8 red[XPI_AWG];
  local float8 acc[XPI_MAX_HD];        /* unnormalized output column j of the 8 heads */
  local float8 ms[1], ls[1], cs[1];    /* running max and sum, this block's correction */
  local ulong rows[XPI_AWG];           /* the cache offsets of the block's keys (a table lookup each, done once) */
  local int last;
  int lid = get_local_id(0), g = get_group_id(0);
  int gs = hq / hk, hc = (gs + XPI_GC - 1) / XPI_GC;
  int s = g % splits, r = g / splits, chunk = r % hc;
  r /= hc;
  int kh = r % hk, i = r / hk;
  int h0 = kh * gs + chunk * XPI_GC, nh = min(XPI_GC, gs - chunk * XPI_GC); /* this group's heads h0 .. h0+nh-1 */
  const global int *tbl = tables + (ulong)seq[i] * max_blocks;
  local float *qf = (local float *)qs;
  for (int e = lid; e < XPI_GC * hd; e += XPI_AWG) { /* e = j * 8 + hh */
    int j = e / XPI_GC, hh = e % XPI_GC;
    qf[e] = hh < nh ? q[((ulong)i * hq + h0 + hh) * hd + j] : 0.0f;
  }
  int P = store ? pos[i] : -1; /* the position read from kn/vn */
  ulong no = ((ulong)i * hk + kh) * hd;
  if (store && chunk == 0 && s == 0 && P >= 0 && (P >> bshift) < max_blocks && tbl[P >> bshift] >= 0 &&
      tbl[P >> bshift] < n_blocks) /* uniform over the group; the slot checks of xpi_kv_store */
    for (int j = lid; j < hd; j += XPI_AWG) {
      ulong dst = xpi_kv_row(tbl, P, bshift, hk, kh, hd) + j;
      xpi_store(kc, kdt, dst, kn[no + j]);
      xpi_store(vc, kdt, dst, vn[no + j]);
    }
  for (int j = lid; j < hd; j += XPI_AWG) acc[j] = (float8)(0.0f);
  if (lid == 0) ms[0] = (float8)(-INFINITY), ls[0] = (float8)(0.0f);
  barrier(CLK_LOCAL_MEM_FENCE);
  int L = pos[i] + 1, w0 = xpi_first_key(pos[i], window);
  int per = ((L - w0 + splits - 1) / splits + XPI_AWG - 1) / XPI_AWG * XPI_AWG;
  int k0 = w0 + s * per, k1 = min(L, k0 + per); /* this split's keys; none when k0 >= L */
  for (int t0 = k0; t0 < k1; t0 += XPI_AWG) {
    int t = t0 + lid;
    float8 d = (float8)(0.0f);
    if (t < k1) { /* key t's row, read once for every head */
      ulong kb = t == P ? 0 : xpi_kv_row(tbl, t, bshift, hk, kh, hd);
      rows[lid] = kb;
      if (t == P)
        for (int j = 0; j < hd; j++) d += qs[j] * xpi_round_dt(kn[no + j], kdt);
      else
        for (int j = 0; j < hd; j++) d += qs[j] * xpi_load(kc, kdt, kb + j);
    }
    float8 sc = d * scale;
    if (softcap > 0.0f) sc = softcap * tanh(sc / softcap);
    sc = t < k1 ? sc : (float8)(-INFINITY);
    p[lid] = sc;
    red[lid] = sc;
    for (int st = XPI_AWG / 2; st > 0; st >>= 1) { /* each head's block max */
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lid < st) red[lid] = fmax(red[lid], red[lid + st]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float8 mo = ms[0], mn = fmax(mo, red[0]); /* finite: key t0 < k1 is in the block (a padding head: 0) */
    barrier(CLK_LOCAL_MEM_FENCE); /* red[] and ms[] are rewritten */
    if (lid == 0) cs[0] = exp(mo - mn), ms[0] = mn;
    float8 pt = t < k1 ? exp(p[lid] - mn) : (float8)(0.0f);
    p[lid] = pt;
    red[lid] = pt;
    for (int st = XPI_AWG / 2; st > 0; st >>= 1) { /* each head's block sum; the barriers also publish p[], cs[] */
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lid < st) red[lid] += red[lid + st];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float8 corr = cs[0];
    if (lid == 0) ls[0] = ls[0] * corr + red[0]; /* read after the block's last barrier */
    int nt = min(XPI_AWG, k1 - t0);
    for (int j = lid; j < hd; j += XPI_AWG) {
      float8 a = acc[j] * corr;
      for (int tt = 0; tt < nt; tt++) /* value row t0 + tt, read once for every head */
        a += p[tt] * (t0 + tt == P ? xpi_round_dt(vn[no + j], kdt) : xpi_load(vc, kdt, rows[tt] + j));
      acc[j] = a;
    }
    barrier(CLK_LOCAL_MEM_FENCE); /* p[], red[], cs[] and rows[] are rewritten next block; ls[] is published */
  }
  const local float *af = (const local float *)acc, *mf = (const local float *)ms, *lf = (const local float *)ls;
  if (splits == 1) {
    for (int e = lid; e < nh * hd; e += XPI_AWG) { /* e = hh * hd + j: coalesced writes */
      int hh = e / hd, j = e % hd;
      out[((ulong)i * hq + h0 + hh) * hd + j] = af[j * XPI_GC + hh] / lf[hh];
    }
    return;
  }
  /* this split's state ((h * splits + s) * (hd + 2): m, l, acc[hd]), then the last work-group of the (token, KV
   * head, chunk) merges them */
  for (int e = lid; e < nh * (hd + 2); e += XPI_AWG) {
    int hh = e / (hd + 2), j = e % (hd + 2);
    part[((ulong)(h0 + hh) * splits + s) * (hd + 2) + j] = j == 0 ? mf[hh] : j == 1 ? lf[hh] : af[(j - 2) * XPI_GC + hh];
  }
  /* The group's writes, then one device-scope acq_rel count: its release side publishes what the barrier
   * gathered (a device-scope fence flushes the compute unit's L1 on Intel GPUs), its acquire side in the last group
   * orders the reads after the barrier below. (No atomic_work_item_fence: PoCL's library lacks the mem_fence it
   * becomes.) */
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  global atomic_int *ctr = (global atomic_int *)cnt + (kh * hc + chunk);
  if (lid == 0)
    last = atomic_fetch_add_explicit(ctr, 1, memory_order_acq_rel, memory_scope_device) == splits - 1;
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (!last) return;
  for (int hh = 0; hh < nh; hh++) {
    const global float *ph = part + (ulong)(h0 + hh) * splits * (hd + 2);
    float M = -INFINITY, S = 0.0f;
    for (int sp = 0; sp < splits; sp++) M = fmax(M, ph[sp * (hd + 2)]);
    for (int sp = 0; sp < splits; sp++) S += ph[sp * (hd + 2) + 1] * exp(ph[sp * (hd + 2)] - M);
    for (int j = lid; j < hd; j += XPI_AWG) {
      float a = 0.0f;
      for (int sp = 0; sp < splits; sp++) a += ph[sp * (hd + 2) + 2 + j] * exp(ph[sp * (hd + 2)] - M);
      out[((ulong)i * hq + h0 + hh) * hd + j] = a / S;
    }
  }
  if (lid == 0) atomic_store_explicit(ctr, 0, memory_order_relaxed, memory_scope_device); /* for the next launch */
}

/* eager_forward(out, q, cache, scores[n*hq, n_ctx] scratch; n_ctx = max_blocks << bshift). Grid: n*hq groups
 * of 64. */
__attribute__((reqd_work_group_size(XPI_AWG, 1, 1)))
kernel void xpi_attn_eager(global float *out, const global float *q, const global void *kc, const global void *vc,
                           int kdt, const global int *pos, const global int *seq, const global int *tables,
                           int max_blocks, int bshift, int hq, int hk, int hd, float scale, int window,
                           float softcap, global float *scores) {
  local float red[XPI_AWG];
  int lid = get_local_id(0), g = get_group_id(0);
  int i = g / hq, h = g % hq, kh = h / (hq / hk);
  ulong qo = ((ulong)i * hq + h) * hd;
  global float *S = scores + (ulong)g * ((ulong)max_blocks << bshift);
  const global int *tbl = tables + (ulong)seq[i] * max_blocks;
  int L = pos[i] + 1, w0 = xpi_first_key(pos[i], window);
  float mx = -INFINITY;
  for (int t = w0 + lid; t < L; t += XPI_AWG) {
    ulong kb = xpi_kv_row(tbl, t, bshift, hk, kh, hd);
    float d = 0.0f;
    for (int j = 0; j < hd; j++) d += q[qo + j] * xpi_load(kc, kdt, kb + j);
    S[t] = xpi_cap(d * scale, softcap);
    mx = fmax(mx, S[t]);
  }
  mx = xpi_wg_reduce(red, mx, 1);
  float sum = 0.0f;
  for (int t = w0 + lid; t < L; t += XPI_AWG) {
    float e = exp(S[t] - mx);
    S[t] = e;
    sum += e;
  }
  sum = xpi_wg_reduce(red, sum, 0);
  barrier(CLK_GLOBAL_MEM_FENCE); /* S[] written by other work-items */
  for (int j = lid; j < hd; j += XPI_AWG) {
    float a = 0.0f;
    for (int t = w0; t < L; t++) a += S[t] * xpi_load(vc, kdt, xpi_kv_row(tbl, t, bshift, hk, kh, hd) + j);
    out[qo + j] = a / sum;
  }
}

#define XPI_FR 4  /* query rows per work-group */
#define XPI_FL 16 /* lanes per row == keys per tile */

/* flash_attention_2_forward(out, q, cache). Rows of KV head kh: r = i * g + hg (g = hq / hk, query head
 * kh * g + hg). Grid: groups (ceil(n*g / 4), hk) of 64 = 4 rows x 16 lanes. The rows of a work-group share
 * the K/V tiles staged in local memory, which needs one sequence: a group whose rows belong to several
 * sequences (g < 4, decode of many sequences) takes one pass per sequence, each row computed in its own. */
__attribute__((reqd_work_group_size(XPI_FR * XPI_FL, 1, 1)))
kernel void xpi_flash_attention_2(global float *out, const global float *q, const global void *kc,
                                  const global void *vc, int kdt, const global int *pos, const global int *seq,
                                  const global int *tables, int max_blocks, int bshift, int n, int hq, int hk,
                                  int hd, float scale, int window, float softcap) {
  local float ks[XPI_FL * XPI_MAX_HD];
  local float vs[XPI_FL * XPI_MAX_HD];
  local float qs[XPI_FR * XPI_MAX_HD];
  local float ps[XPI_FR * XPI_FL];
  local float red[XPI_FR * XPI_FL];
  int lid = get_local_id(0), rho = lid / XPI_FL, lane = lid % XPI_FL;
  int g = hq / hk, kh = get_group_id(1);
  int r = get_group_id(0) * XPI_FR + rho;
  int valid = r < n * g;
  int i = valid ? r / g : 0, h = kh * g + (valid ? r % g : 0);
  ulong qo = ((ulong)i * hq + h) * hd;
  int L = valid ? pos[i] + 1 : 0, w0 = valid ? xpi_first_key(pos[i], window) : 0;
  for (int j = lane; j < hd; j += XPI_FL) qs[rho * XPI_MAX_HD + j] = valid ? q[qo + j] * scale : 0.0f;
  float m = -INFINITY, l = 0.0f;
  /* This lane's output columns lane + 16 c. Every loop over c runs the full constant count, unrolled, so acc
   * is indexed by constants and stays in registers: a loop bounded by hd indexed it dynamically, which put it
   * in scratch / private memory (ocloc, tests/isa: 1-2 KiB of scratch per thread on tgllp and pvc). */
  float acc[XPI_MAX_HD / XPI_FL];
  __attribute__((opencl_unroll_hint))
  for (int c = 0; c < XPI_MAX_HD / XPI_FL; c++) acc[c] = 0.0f;
  for (int ph = 0; ph < XPI_FR; ph++) { /* one pass per distinct sequence of the group's rows (uniform) */
    int rp = get_group_id(0) * XPI_FR + ph;
    if (rp >= n * g) break;
    int sp = seq[rp / g], seen = 0, lmax = 0, lmin = INT_MAX;
    for (int rr = 0; rr < ph; rr++) seen |= seq[(get_group_id(0) * XPI_FR + rr) / g] == sp;
    if (seen) continue;
    for (int rr = 0; rr < XPI_FR; rr++) { /* the rows of this sequence bound the tile loop: the latest key */
      int r2 = get_group_id(0) * XPI_FR + rr; /* and the earliest key of any window */
      if (r2 < n * g && seq[r2 / g] == sp) {
        lmax = max(lmax, pos[r2 / g] + 1);
        lmin = min(lmin, xpi_first_key(pos[r2 / g], window));
      }
    }
    int mine = valid && seq[i] == sp;
    const global int *tbl = tables + (ulong)sp * max_blocks;
    for (int t0 = lmin; t0 < lmax; t0 += XPI_FL) {
      for (int e = lid; e < XPI_FL * hd; e += XPI_FR * XPI_FL) {
        int tt = e / hd, j = e % hd, t = t0 + tt;
        ulong o = t < lmax ? xpi_kv_row(tbl, t, bshift, hk, kh, hd) + j : 0;
        ks[tt * XPI_MAX_HD + j] = t < lmax ? xpi_load(kc, kdt, o) : 0.0f;
        vs[tt * XPI_MAX_HD + j] = t < lmax ? xpi_load(vc, kdt, o) : 0.0f;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      int t = t0 + lane;
      float s = -INFINITY;
      if (mine && t < L && t >= w0) {
        float d = 0.0f;
        for (int j = 0; j < hd; j++) d += qs[rho * XPI_MAX_HD + j] * ks[lane * XPI_MAX_HD + j];
        s = xpi_cap(d, softcap); /* q was scaled when staged */
      }
      /* row max over the 16 lanes of this row */
      red[lid] = s;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int st = XPI_FL / 2; st > 0; st >>= 1) {
        if (lane < st) red[lid] = fmax(red[lid], red[lid + st]);
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      float mn = fmax(m, red[rho * XPI_FL]);
      barrier(CLK_LOCAL_MEM_FENCE);
      float pt = 0.0f, corr = 1.0f;
      if (mine && mn != -INFINITY) { /* a row outside this pass, or with no key in this tile yet, keeps its state */
        pt = s == -INFINITY ? 0.0f : exp(s - mn);
        corr = exp(m - mn);
      }
      ps[lid] = pt;
      red[lid] = pt;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int st = XPI_FL / 2; st > 0; st >>= 1) {
        if (lane < st) red[lid] += red[lid + st];
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      if (mine) {
        l = l * corr + red[rho * XPI_FL];
        __attribute__((opencl_unroll_hint))
        for (int c = 0; c < XPI_MAX_HD / XPI_FL; c++) {
          int j = lane + c * XPI_FL;
          if (j < hd) {
            float a = acc[c] * corr;
            for (int tt = 0; tt < XPI_FL; tt++) a += ps[rho * XPI_FL + tt] * vs[tt * XPI_MAX_HD + j];
            acc[c] = a;
          }
        }
        m = mn;
      }
      barrier(CLK_LOCAL_MEM_FENCE); /* tiles, ps and red are rewritten next round */
    }
  }
  if (valid) {
    __attribute__((opencl_unroll_hint))
    for (int c = 0; c < XPI_MAX_HD / XPI_FL; c++)
      if (lane + c * XPI_FL < hd) out[qo + lane + c * XPI_FL] = acc[c] / l;
  }
}
