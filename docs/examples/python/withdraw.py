"""A signed withdrawal with safe retries: python3 withdraw.py --currency USDT --amount 10 --method 1 [--request-id UUID]

Reads PAYMENTS_BASE_URL (default http://127.0.0.1:8080), PAYMENTS_API_KEY and PAYMENTS_SECRET_KEY. Prints the
withdrawal as JSON. On no answer it prints the request id: run again with --request-id to retry the same
withdrawal (it is never made twice).
"""

import argparse
import json
import os
import sys

from payments import ApiError, Client, RetriesExhausted


def main():
    parser = argparse.ArgumentParser(description="Create a signed withdrawal, retried safely.")
    parser.add_argument("--currency", required=True)
    parser.add_argument("--amount", required=True, help="a decimal string, e.g. 10 or 10.5")
    parser.add_argument("--method", required=True, type=int, help="the withdrawal method id")
    parser.add_argument("--request-id", help="the id of a withdrawal to retry")
    parser.add_argument("--max-attempts", type=int, default=4)
    args = parser.parse_args()
    client = Client(
        os.environ.get("PAYMENTS_BASE_URL", "http://127.0.0.1:8080"),
        os.environ["PAYMENTS_API_KEY"],
        os.environ["PAYMENTS_SECRET_KEY"],
        max_attempts=args.max_attempts,
    )
    body = {"currency": args.currency, "amount": args.amount, "withdrawalMethodId": args.method}
    try:
        answer = client.signed_post("/public/v1/withdrawals/create", body, args.request_id)
    except ApiError as error:
        print(json.dumps(error.problem), file=sys.stderr)
        return 1
    except RetriesExhausted as error:
        print("%s; retry with --request-id %s" % (error, error.request_id), file=sys.stderr)
        return 1
    print(json.dumps(answer, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
