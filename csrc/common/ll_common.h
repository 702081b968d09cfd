/* ll_common.h - status codes shared by every part of the lowlat core.
 *
 * Every function that can fail returns one of these (0 is success, errors are
 * negative) so the Python face can turn each into a precise exception.  This
 * header is also fed to cffi, so it holds declarations only. */
#ifndef LL_COMMON_H
#define LL_COMMON_H

enum ll_status {
    LL_OK = 0,
    LL_ENOMEM = -1,   /* an allocation failed (creation time only) */
    LL_EINVAL = -2,   /* an argument is out of its documented range */
    LL_EDOUBLE = -3,  /* pool: the block is already free */
    LL_EFOREIGN = -4, /* pool: the pointer was not handed out by this pool */
    LL_ENOTSUP = -5,  /* not supported on this platform (e.g. pinning on macOS) */
    LL_ERANGE = -6,   /* histogram: value above the highest trackable value */
    LL_ESYS = -7,     /* an operating-system call failed; see errno */
    LL_EMISMATCH = -8 /* two objects with incompatible layouts */
};

#endif
