"""Another Azure SDK on the other end of Tessera's queues: the Python azure-storage-queue (v12).

Reads one JSON request on stdin, writes one JSON answer on stdout. The connection string comes
from TESSERA_AZURE_CONNECTION_STRING. The SDK's default message policies are kept (bodies go
and come as plain text) unless the request says "encoding": "base64": then the SDK's
TextBase64EncodePolicy and TextBase64DecodePolicy are used, as an Azure Functions queue output
binding and queue trigger do on their default settings.

Requests:
  {"op": "send", "queue": Q, "bodies": [...]}                  -> {"ids": [...]}
  {"op": "receive", "queue": Q, "max": N, "visibility": S,
   "delete": bool, "release": bool}                            -> {"messages": [{"id", "body",
                                                                  "dequeue_count"}]}
  "release" makes each received message visible again at once (update with a timeout of 0).
  {"op": "blob", "container": C, "blob": B}                    -> {"content_type", "metadata"}
"""

import json
import os
import sys

from azure.storage.queue import QueueClient, TextBase64DecodePolicy, TextBase64EncodePolicy


def main() -> None:
    request = json.load(sys.stdin)
    conn = os.environ["TESSERA_AZURE_CONNECTION_STRING"]
    policies = {}
    if request.get("encoding") == "base64":
        policies = {
            "message_encode_policy": TextBase64EncodePolicy(),
            "message_decode_policy": TextBase64DecodePolicy(),
        }
    op = request["op"]
    if op == "blob":
        from azure.storage.blob import BlobClient

        blob = BlobClient.from_connection_string(conn, request["container"], request["blob"])
        props = blob.get_blob_properties()
        json.dump(
            {"content_type": props.content_settings.content_type, "metadata": props.metadata},
            sys.stdout,
        )
        return
    queue = QueueClient.from_connection_string(conn, request["queue"], **policies)
    if op == "send":
        ids = [queue.send_message(body).id for body in request["bodies"]]
        answer = {"ids": ids}
    elif op == "receive":
        messages = []
        pages = queue.receive_messages(
            messages_per_page=request.get("max", 32),
            visibility_timeout=request.get("visibility", 30),
            max_messages=request.get("max", 32),
        )
        for msg in pages:
            messages.append(
                {"id": msg.id, "body": msg.content, "dequeue_count": msg.dequeue_count}
            )
            if request.get("delete"):
                queue.delete_message(msg)
            elif request.get("release"):
                queue.update_message(msg, visibility_timeout=0)
        answer = {"messages": messages}
    else:
        raise SystemExit(f"unknown op {op!r}")
    json.dump(answer, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
