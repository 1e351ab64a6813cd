-- CreateTable
CREATE TABLE "job_last_runs" (
    "job" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "finished_at" TIMESTAMPTZ(3),
    "failed_at" TIMESTAMPTZ(3),
    "fail_reason" TEXT,
    "source" TEXT NOT NULL,

    CONSTRAINT "job_last_runs_pkey" PRIMARY KEY ("job")
);
