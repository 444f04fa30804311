// An empty program. tests/layering/meson.build links each torch-free library into it whole
// (every object, not only those a program calls), with nothing but the dependencies that library
// declares: an object that calls into a layer it does not declare fails this link, in any build.
int main() { return 0; }
