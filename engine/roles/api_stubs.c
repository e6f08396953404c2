#include "api_internal.h"
#define STUB(n)                                                                                                       \
    void n(PGconn *conn, struct api_req *r)                                                                           \
    {                                                                                                                 \
        (void)conn;                                                                                                   \
        api_error(r, 501, "not_implemented", "%s is not implemented by hookd yet", r->route->op);                     \
    }
STUB(api_endpoint_list)
STUB(api_endpoint_create) STUB(api_endpoint_get) STUB(api_endpoint_update) STUB(api_endpoint_patch)
    STUB(api_endpoint_delete) STUB(api_endpoint_secret_get) STUB(api_endpoint_secret_rotate)
        STUB(api_endpoint_headers_get) STUB(api_endpoint_headers_update) STUB(api_endpoint_headers_patch)
            STUB(api_endpoint_recover) STUB(api_message_list) STUB(api_message_create) STUB(api_message_get)
                STUB(api_attempt_list_by_msg) STUB(api_attempt_list_by_endpoint) STUB(api_attempt_resend)
                    STUB(api_event_type_list) STUB(api_event_type_create) STUB(api_event_type_get)
                        STUB(api_event_type_update) STUB(api_event_type_patch) STUB(api_event_type_delete)
