/* state.c - placeholder: print, assert, variables and tensor arrays. */
#include "../core/rt.h"

void ag_print_at(ag_loc loc, int n, const ag_print_arg *args) { (void)loc, (void)n, (void)args; }
void ag_set_print_stream(FILE *out) { (void)out; }
void ag_assert_at(ag_loc loc, ag_tensor cond, const char *message) { (void)loc, (void)cond, (void)message; }
ag_variable ag_variable_new_at(ag_loc loc, ag_tensor init) { (void)loc, (void)init; return NULL; }
ag_tensor ag_variable_read_at(ag_loc loc, ag_variable v) { (void)loc, (void)v; return rt_error_tensor(); }
void ag_assign_at(ag_loc loc, ag_variable v, ag_tensor value) { (void)loc, (void)v, (void)value; }
void ag_assign_add_at(ag_loc loc, ag_variable v, ag_tensor value) { (void)loc, (void)v, (void)value; }
void ag_assign_sub_at(ag_loc loc, ag_variable v, ag_tensor value) { (void)loc, (void)v, (void)value; }
void ag_variable_free(ag_variable v) { (void)v; }
ag_tensor_array ag_tensor_array_new_at(ag_loc loc, ag_dtype dt, int64_t size, bool dyn) { (void)loc, (void)dt, (void)size, (void)dyn; ag_tensor_array t = {{0, 0}}; return t; }
ag_tensor_array ag_tensor_array_write_at(ag_loc loc, ag_tensor_array ta, ag_operand index, ag_tensor value) { (void)loc, (void)index, (void)value; return ta; }
ag_tensor ag_tensor_array_read_at(ag_loc loc, ag_tensor_array ta, ag_operand index) { (void)loc, (void)ta, (void)index; return rt_error_tensor(); }
ag_tensor ag_tensor_array_stack_at(ag_loc loc, ag_tensor_array ta) { (void)loc, (void)ta; return rt_error_tensor(); }
ag_tensor ag_tensor_array_size_at(ag_loc loc, ag_tensor_array ta) { (void)loc, (void)ta; return rt_error_tensor(); }
void rt_state_shutdown(void) {}
char *rt_format_value(const rt_value *v) { (void)v; return NULL; }
FILE *rt_print_stream(void) { return stdout; }
