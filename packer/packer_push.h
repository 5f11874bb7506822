/* packer_push.h — `packer push DATASET s3://bucket/prefix`: a dataset's
 * shard files uploaded to object storage (store/s3.h), the manifest last.
 * packer_push.c where the build has libcurl, packer_push_none.c (a clear
 * refusal) where it has not. */
#ifndef FEEDER_PACKER_PUSH_H
#define FEEDER_PACKER_PUSH_H

/* argv[0] is "push"; returns the exit status (packer.h's conventions). */
int packer_push_main(int argc, char **argv);

#endif
