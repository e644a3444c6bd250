#include <stdio.h>

/* Debug-print kernel: names inside literals are text, never renamed. */
void print_n12_w(const float *n12_w, const int *n4_labels) {
  const char *v1_fmt = "n12_w[%d] = %f (i1=%d)\n";
  const char v2_sep = '\'';
  const char v3_quote = '"';
  const wchar_t *v4_wide = L"n12_w \"wide\" \x41\101";
  const char *v5_utf8 = u8"\u00e9t\u00e9: i1 \\";
  const char16_t v6_c16 = u'\u03b8';
  const char32_t *v7_c32 = U"i2 \U0001F600";
  const char *v8_spliced = "n12_w on two \
lines, still one literal: i1";
  for (int i1 = 0; i1 <= 3; ++i1) {
    printf(v1_fmt, i1, n12_w[i1], i1);
    printf("%c%c label '%d' // not a comment /* nor this */\n", v2_sep, v3_quote, n4_labels[i1]);
  }
  printf("%ls %s %d %ls %s\n", v4_wide, v5_utf8, (int)v6_c16, (const wchar_t *)v7_c32, v8_spliced);
  putchar('\n'); putchar('\\'); putchar('\x7f'); putchar(L'\0');
}
