/* The chat-template layer between the public API and the Jinja engine (src/jinja). */
#ifndef XPI_CHAT_INTERNAL_H
#define XPI_CHAT_INTERNAL_H

#include <stddef.h>
#include "xpuinfer.h"

/* Structured messages as a JSON array (malloc'd, *len bytes); errors name the message and the field. */
xpi_status chat_messages_json(const xpi_chat_message *m, size_t n, char **out, size_t *len);
/* Length of the valid UTF-8 prefix of s[0, n). */
size_t chat_utf8_valid(const char *s, size_t n);

#endif
