/* cache_walk.c - a stand-alone program (not part of the library build):
 * sums a 512 x 512 matrix of doubles (2 MiB) four times, by rows (each
 * cache line used whole) or by columns (one double per line fetched), for
 * cachegrind's simulated cache to count the misses of each walk.
 * usage: cache_walk [r|c]   (default: by rows)
 * Built and run by lowlat.experiments.measurement.cachegrind_demo (chapter 04). */
#include <stdio.h>
#include <stdlib.h>

#define N 512

int main(int argc, char **argv)
{
    static double m[N][N];
    int by_column = argc > 1 && argv[1][0] == 'c';
    double s = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            m[i][j] = i + j;
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                s += by_column ? m[j][i] : m[i][j];
    printf("%g\n", s);
    return 0;
}
