/* Encode throughput of one tokenizer: loads DIR/tokenizer.json, encodes a text file N times (add_special=1), prints
 * the best time and a hash of the ids (to check that two builds give the same ids). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "xpuinfer.h"
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  xpi_tokenizer*t; if(xpi_tokenizer_load(argv[1],&t)){fprintf(stderr,"%s\n",xpi_last_error());return 1;}
  FILE*f=fopen(argv[2],"rb"); fseek(f,0,SEEK_END); long n=ftell(f); fseek(f,0,SEEK_SET); char*buf=malloc(n); fread(buf,1,n,f); fclose(f);
  int reps=atoi(argv[3]); size_t cap=n+16; int32_t*ids=malloc(cap*4); size_t nid=0;
  double best=1e9;
  for(int r=0;r<reps;r++){double t0=now(); if(xpi_tokenize(t,buf,n,1,ids,cap,&nid)){fprintf(stderr,"%s\n",xpi_last_error());return 1;} double dt=now()-t0; if(dt<best)best=dt;}
  unsigned long h=0; for(size_t i=0;i<nid;i++) h=h*31+ids[i];
  printf("%s: %ld bytes -> %zu ids (hash %lx), best of %d: %.2f ms, %.2f MB/s\n",argv[1],n,nid,h,reps,best*1e3,n/best/1e6);
  return 0;}
