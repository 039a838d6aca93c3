#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <time.h>
static uint64_t now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000ull+t.tv_nsec;}
static uint64_t cnt[2];
static void *f(void *a){long i=(long)a;cpu_set_t s;CPU_ZERO(&s);CPU_SET(i,&s);sched_setaffinity(0,sizeof(s),&s);
 uint64_t e=now()+200000000ull,c=0;while(now()<e)c++;cnt[i]=c;return 0;}
int main(int argc,char**argv){int n=argc>1?2:1;pthread_t t[2];for(long i=0;i<n;i++)pthread_create(&t[i],0,f,(void*)i);
for(int i=0;i<n;i++)pthread_join(t[i],0);printf("threads %d: %llu %llu\n",n,(unsigned long long)cnt[0],(unsigned long long)cnt[1]);}
