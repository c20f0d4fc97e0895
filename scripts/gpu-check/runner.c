// Loads one kernel library (dlopen, as Python loads an extension) and runs its kernel; prints
// one JSON line: {"lib", "loaded", "rc", "message", "sum", "arch"}. Exit 0 whenever it could say
// what happened.
#include <dlfcn.h>
#include <stdio.h>

typedef int (*run_fn)(int, unsigned long long *, int *, char *, int);

static void json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        if ((unsigned char)*s < 0x20) { printf("\\u%04x", *s); continue; }
        putchar(*s);
    }
    putchar('"');
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: runner LIB\n");
        return 2;
    }
    printf("{\"lib\": ");
    json_string(argv[1]);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf(", \"loaded\": false, \"message\": ");
        json_string(dlerror());
        printf("}\n");
        return 0;
    }
    run_fn run = (run_fn)dlsym(h, "kern_run");
    if (!run) {
        printf(", \"loaded\": true, \"message\": \"no kern_run\"}\n");
        return 0;
    }
    unsigned long long sum = 0;
    int arch = 0;
    char msg[512] = "";
    int rc = run(1 << 20, &sum, &arch, msg, sizeof msg);
    printf(", \"loaded\": true, \"rc\": %d, \"message\": ", rc);
    json_string(msg);
    printf(", \"sum\": %llu, \"arch\": %d}\n", sum, arch);
    return 0;
}
