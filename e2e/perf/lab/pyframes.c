/* pyframes: one machine-code trampoline per Python code object, so that callgrind names Python functions.
 *
 * CPython 3.11 runs every Python function inside one C function (_PyEval_EvalFrameDefault), so callgrind
 * counts all Python code as that one function. Installed as the interpreter's frame evaluator (PEP 523),
 * this shim calls the default evaluator through a small trampoline of its own for each code object: a
 * call to a distinct address, which callgrind reports as a function of its own ("0x..."). pyframes_dump
 * writes "address file:line:qualname" a line, which e2e/perf/lab/cgpython.py uses to name them. With a frame
 * evaluator set, CPython calls Python functions through it instead of inlining them in the caller's
 * evaluation, so counts taken this way are ~10 % higher: use them to rank, not as the figure.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define SLOT 16
#define MAX_CODES (1 << 17)

typedef PyObject *(*trampoline_t)(PyThreadState *, _PyInterpreterFrame *, int, _PyFrameEvalFunction);

/* sub rsp, 8; call rcx; add rsp, 8; ret: calls the fourth argument with the first three (x86-64 SysV). */
static const unsigned char CODE[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3};

static unsigned char *region;
static int used;
static Py_ssize_t extra_index = -1;
static PyObject *codes[MAX_CODES];

/* The frame evaluator: the code object's trampoline (made on its first call) runs the default one. */
PyObject *pyframes_eval(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag) {
    PyObject *code = (PyObject *)frame->f_code;
    void *trampoline = NULL;
    if (_PyCode_GetExtra(code, extra_index, &trampoline) < 0) {
        PyErr_Clear();
        trampoline = NULL;
    }
    if (trampoline == NULL) {
        if (used >= MAX_CODES) {
            return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
        }
        trampoline = region + (size_t)used * SLOT;
        memcpy(trampoline, CODE, sizeof CODE);
        Py_INCREF(code);
        codes[used++] = code;
        _PyCode_SetExtra(code, extra_index, trampoline);
    }
    return ((trampoline_t)trampoline)(tstate, frame, throwflag, _PyEval_EvalFrameDefault);
}

int pyframes_install(void) {
    region = mmap(NULL, (size_t)SLOT * MAX_CODES, PROT_READ | PROT_WRITE | PROT_EXEC,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) {
        return -1;
    }
    extra_index = _PyEval_RequestCodeExtraIndex(NULL);
    if (extra_index < 0) {
        return -1;
    }
    _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), pyframes_eval);
    return 0;
}

int pyframes_dump(const char *path) {
    FILE *out = fopen(path, "w");
    if (out == NULL) {
        return -1;
    }
    for (int i = 0; i < used; i++) {
        PyCodeObject *code = (PyCodeObject *)codes[i];
        const char *file = PyUnicode_AsUTF8(code->co_filename);
        const char *name = PyUnicode_AsUTF8(code->co_qualname);
        fprintf(out, "%lx %s:%d:%s\n", (unsigned long)(region + (size_t)i * SLOT), file ? file : "?",
                code->co_firstlineno, name ? name : "?");
    }
    fclose(out);
    return used;
}
